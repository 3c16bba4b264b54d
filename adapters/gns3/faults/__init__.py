"""The fault catalog shipped with the copilot: YAML files, one lab shape and its faults each.

Read and judged at start-up by :mod:`adapters.gns3._faults`; the format is
``docs/faults.md`` (JSON Schema: ``docs/fault-file.schema.json``).
"""

__all__: list[str] = []
