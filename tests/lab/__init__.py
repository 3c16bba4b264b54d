"""The real-router lab (FRRouting in GNS3 Docker nodes); run with ``pytest --router-lab``."""
