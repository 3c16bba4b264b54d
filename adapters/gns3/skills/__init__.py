"""Device skills shipped with the copilot: Markdown files with YAML front matter.

Each file has ``device_type`` and ``topic`` (and a ``title`` and ``summary``) in its
front matter; ``forbidden_commands.txt`` lists the forbidden command prefixes.
Operators can add or override files from their own directory (see ``docs/gns3.md``).
"""

__all__: list[str] = []
