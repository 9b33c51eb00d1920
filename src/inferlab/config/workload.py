"""Where a load point's prompts come from: ``WorkloadSpec``, a kind of ``WORKLOADS``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = ["PREFIX_FIELDS", "WORKLOADS", "WorkloadKind", "WorkloadSpec"]


#: the fields of a shared-prefix workload; left out of a dump for the other kinds
PREFIX_FIELDS = ("prefixes", "prefix_tokens", "suffix_tokens", "prefix_dist")


@dataclass(frozen=True)
class WorkloadKind:
    """What a workload kind asks of its spec: prompts from a file (``path``) or made to an
    exact token length (a tokenizer); ``own`` fields (dumped for this kind only); the fields
    that make two of its workloads the same (``load.workload.workload_descriptor``; a file's
    kind: its content too); its label (a format of the spec ``w``)."""

    from_file: bool = False
    exact: bool = False
    own: tuple[str, ...] = ()
    identity: tuple[str, ...] = ()
    label: str = "{w.kind}"


#: every workload kind, by name; ``load.workload.MAKERS`` has a prompt maker for each
WORKLOADS: dict[str, WorkloadKind] = {
    "random": WorkloadKind(exact=True, identity=("input_tokens",)),
    "shared-prefix": WorkloadKind(
        exact=True,
        own=PREFIX_FIELDS,
        identity=("label", "prefix_tokens", "suffix_tokens", "prefix_dist"),
        label="prefix:{w.prefixes}x{w.prefix_tokens}",
    ),
    "jsonl": WorkloadKind(from_file=True),
    "sharegpt": WorkloadKind(from_file=True),
}


class WorkloadSpec(BaseModel):
    """Where prompts come from and how long outputs are (tokens): a kind of ``WORKLOADS``.
    ``shared-prefix``: each prompt is one of ``prefixes`` shared prefixes of
    ``prefix_tokens``, chosen ``uniform`` or ``zipf:S``, then a suffix of ``suffix_tokens``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = "random"
    input_tokens: int = Field(default=256, ge=1)
    output_tokens: int = Field(default=256, ge=1)
    path: Path | None = None
    seed: int = 0
    prefixes: int = Field(default=8, ge=1)
    prefix_tokens: int = Field(default=1024, ge=1)
    suffix_tokens: int = Field(default=64, ge=1)
    prefix_dist: str = Field(default="uniform", pattern=r"^(uniform|zipf:[0-9]*\.?[0-9]+)$")

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind not in WORKLOADS:
            raise ValueError(f"unknown workload kind {kind!r}; expected {', '.join(WORKLOADS)}")
        return kind

    @model_validator(mode="after")
    def _path_needed(self) -> WorkloadSpec:
        if self.of.from_file and self.path is None:
            raise ValueError(f"workload kind {self.kind!r} needs a path")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A kind's own fields only for that kind (other runs dump the bytes as before)."""
        data: dict[str, Any] = handler(self)
        others = {f for k in WORKLOADS.values() if k is not self.of for f in k.own}
        return {k: v for k, v in data.items() if k not in others}

    @property
    def of(self) -> WorkloadKind:
        """Its kind's row of ``WORKLOADS``."""
        return WORKLOADS[self.kind]

    @property
    def label(self) -> str:
        """``prefix:8x1024`` for shared prefixes; the kind for the others."""
        return self.of.label.format(w=self)
