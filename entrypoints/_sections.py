"""The service's own settings section, ``policy``: the operator's policy, read from a
file or given as JSON. Every other section is the settings type of the component it
configures, declared beside it (``AgentSettings``, ``ChatSettings``, ``WebSettings``…);
:mod:`entrypoints.settings` puts them together. The policy's component is the service
itself (it reads the file and builds the :class:`~copilot_core.policy.PolicyBook`), so
its section lives here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from copilot_core.policy import OperatorPolicy

__all__ = ["PolicySection"]


class PolicySection(BaseModel):
    """The operator's policy (docs/configuration.md): per GNS3 user or group, the highest
    copilot mode, the least approval setting and the LLM endpoints allowed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Path | None = Field(
        default=None,
        description="A YAML or JSON file with the policy (default, groups, users); read "
        "at start-up.",
    )
    rules: OperatorPolicy | None = Field(
        default=None,
        description="The policy itself, as JSON (instead of file).",
    )
    deny_private_llm_endpoints: bool = Field(
        default=False,
        description="Refuse LLM base_urls on loopback, private, link-local and other "
        "non-public addresses unless a rule's llm_endpoints names them.",
    )
    groups_cache_ttl: float = Field(
        default=30.0, ge=0, description="Seconds a user's GNS3 groups are remembered."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.file is not None and self.rules is not None:
            raise ValueError("give the policy as file or as rules, not both")
        if self.file is not None:
            self.operator_policy()  # a file that cannot be read stops the start-up
        return self

    def operator_policy(self) -> OperatorPolicy | None:
        """The policy (read from ``file`` when one is given); ``None``: there is none."""
        policy = self.rules
        if self.file is not None:
            policy = _policy_file(self.file)
        if policy is None and not self.deny_private_llm_endpoints:
            return None
        policy = policy or OperatorPolicy()
        if self.deny_private_llm_endpoints:
            policy = policy.model_copy(update={"deny_private_llm_endpoints": True})
        return policy


def _policy_file(path: Path) -> OperatorPolicy:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the policy file {str(path)!r}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"the policy file {str(path)!r} is not valid YAML/JSON: {exc}") from None
    try:
        return OperatorPolicy.model_validate(data or {})
    except ValueError as exc:
        raise ValueError(f"the policy file {str(path)!r}: {exc}") from None
