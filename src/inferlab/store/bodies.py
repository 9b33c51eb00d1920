"""The registry of what the store keeps beside the runs: one pydantic model per analysis kind
and per verification kind (``store.models``, ``store.checks``), registered by kind. A body is
validated through its kind's model when it is written (a writer's key the model does not
declare is a bug, caught in the writer's tests) and again when it is read (an old store reads
into the same types); the stored JSON itself is the writer's, unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from inferlab.errors import StoreError
from inferlab.store.jsoncols import dumps

__all__ = ["ANALYSES", "VERIFICATIONS", "B", "Body", "Json", "Kinds"]

#: a JSON value a body keeps as it was written (nested parts no reader looks inside)
Json = JsonValue


class Body(BaseModel):
    """A stored JSON object read back typed: every key its writers store declared
    (``extra="forbid"``), ``to_json()`` the object back."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_json(self) -> dict[str, JsonValue]:
        """The JSON object as its writer stored it (the keys it set, by their stored names)."""
        out: dict[str, JsonValue] = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return out


B = TypeVar("B", bound=Body)


@dataclass(frozen=True)
class Kinds:
    """Kind → its body model, for one table (``analyses`` or ``verifications``)."""

    table: str
    models: dict[str, type[Body]] = field(default_factory=dict)

    def register(self, *kinds: str) -> Callable[[type[B]], type[B]]:
        """A class decorator: the model of the bodies of ``kinds``."""

        def put(model: type[B]) -> type[B]:
            for k in kinds:
                if k in self.models:
                    raise ValueError(f"{self.table} kind {k!r} registered twice")
                self.models[k] = model
            return model

        return put

    def model(self, kind: str) -> type[Body]:
        """The model of ``kind``'s bodies (StoreError: none is registered)."""
        try:
            return self.models[kind]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise StoreError(f"{self.table}: no model for kind {kind!r} (known: {known})") from None

    def read(self, kind: str, data: object, where: str) -> Body:
        """``data`` stored as ``kind`` validated into its model; ``where`` names the row in
        the error a body its model does not take raises."""
        model = self.model(kind)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(x) for x in first["loc"]) or "(the body)"
            raise StoreError(
                f"{where}: stored {self.table} {kind!r} does not match {model.__name__} at "
                f"{at}: {first['msg']}"
            ) from None

    def check(self, kind: str, data: Mapping[str, object] | Body) -> object:
        """The JSON to store for a ``kind`` body (a model, or its writer's dict kept as
        written), read back through ``kind``'s model first: what a later read will take."""
        if isinstance(data, Body) and not isinstance(data, self.model(kind)):
            raise StoreError(f"{self.table} {kind!r}: a {type(data).__name__} given")
        stored = json.loads(dumps(data.to_json() if isinstance(data, Body) else dict(data)))
        self.read(kind, stored, f"writing {self.table}")
        return stored


ANALYSES = Kinds("analyses")
VERIFICATIONS = Kinds("verifications")
