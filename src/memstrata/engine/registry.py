"""Where designs, their parts and recipes are found by name.

Designs come from two places: the built-ins listed in :mod:`memstrata.designs`, and any
installed distribution that declares an entry point in the ``memstrata.designs`` group::

    [project.entry-points."memstrata.designs"]
    tiny = "tiny_design:design"     # a Design, or a function returning one

Recipes come from the designs and from the configuration (``[recipes.NAME]``); a
configured recipe may replace a design's recipe of the same name.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memstrata.engine.answer import GroundedAnswerer
from memstrata.engine.contracts import Answerer, Builder, Design, Reader, Route
from memstrata.engine.recipe import Recipe
from memstrata.engine.views import DesignView
from memstrata.errors import ConfigError
from memstrata.models import DERIVED_KINDS, Derived, find_kinds_with, register_kind

ENTRY_POINT_GROUP = "memstrata.designs"
logger = logging.getLogger("memstrata.engine")

P = TypeVar("P", Builder, Route, Answerer, Reader)


def _builtin_designs() -> list[Design]:
    from memstrata.designs import BUILTIN

    return [importlib.import_module(path).design for path in BUILTIN]


def _plugin_designs() -> tuple[list[Design], list[str]]:
    designs, errors = [], []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            design = obj() if callable(obj) and not isinstance(obj, Design) else obj
            if not isinstance(design, Design):
                raise TypeError(f"{ep.value} is not a memstrata Design")
            designs.append(design)
        except Exception as exc:  # a broken plug-in must not take the library down
            logger.warning("design plug-in %r failed to load: %s", ep.name, exc)
            errors.append(f"{ep.name} ({ep.value}): {type(exc).__name__}: {exc}")
    return designs, errors


@functools.cache
def load_designs() -> Registry:
    """The built-in and installed designs, loaded once per process: what declares the
    designs' record kinds to the stores (see :func:`memstrata.models.record_kind`)."""
    return Registry.load()


find_kinds_with(load_designs)


class Registry:
    """Every registered design's parts and recipes, by name."""

    def __init__(
        self, designs: list[Design], extra_recipes: Mapping[str, Recipe] | None = None
    ) -> None:
        self.designs: dict[str, Design] = {}
        self.builders: dict[str, type[Builder]] = {}
        self.routes: dict[str, type[Route]] = {}
        self.answerers: dict[str, type[Answerer]] = {GroundedAnswerer.name: GroundedAnswerer}
        self.recipes: dict[str, Recipe] = {}
        self.origin: dict[str, str] = {}
        self.errors: list[str] = []
        self.views: dict[str, tuple[str, DesignView]] = {}  # name -> (design, view)
        self.kinds: dict[str, type[Derived]] = {}  # record kinds the designs declare
        for design in designs:
            self._add(design)
        for name, recipe in (extra_recipes or {}).items():
            self.recipes[name] = recipe.model_copy(update={"name": name})
            self.origin[name] = "config"
        for name, recipe in self.recipes.items():
            self._check(name, recipe)
        for cls in self.kinds.values():  # a registry that holds together: its kinds count
            register_kind(cls)

    @classmethod
    def load(cls, extra_recipes: Mapping[str, Recipe] | None = None) -> Registry:
        builtins = _builtin_designs()
        plugins, errors = _plugin_designs()
        try:
            cls(builtins + plugins)
        except ConfigError:  # keep the plug-ins that fit, in order; report the others
            fit: list[Design] = []
            for design in plugins:
                try:
                    cls(builtins + fit + [design])
                    fit.append(design)
                except ConfigError as exc:
                    logger.warning("design plug-in %r left out: %s", design.name, exc)
                    errors.append(f"{design.name}: {exc}")
            plugins = fit
        reg = cls(builtins + plugins, extra_recipes)
        reg.errors.extend(errors)
        return reg

    def _add(self, design: Design) -> None:
        if design.name in self.designs:
            raise ConfigError(f"two designs are named {design.name!r}")
        self.designs[design.name] = design
        _put(self.builders, design.builders, design.name)
        _put(self.routes, design.routes, design.name)
        _put(self.answerers, design.answerers, design.name)
        for cls in design.records:
            known = self.kinds.get(cls.kind) or DERIVED_KINDS.get(cls.kind)
            if not cls.kind:
                raise ConfigError(f"design {design.name!r}: {cls.__qualname__} has no kind")
            if known is not None and known is not cls:
                raise ConfigError(
                    f"design {design.name!r}: record kind {cls.kind!r} is "
                    f"{known.__qualname__} already"
                )
            self.kinds[cls.kind] = cls
        for view in design.views:
            if view.name in self.views:
                raise ConfigError(f"design {design.name!r}: view {view.name!r} exists")
            self.views[view.name] = (design.name, view)
        for recipe in design.recipes:
            if recipe.name in self.recipes:
                raise ConfigError(f"design {design.name!r}: recipe {recipe.name!r} exists")
            self.recipes[recipe.name] = recipe
            self.origin[recipe.name] = design.name

    def _check(self, name: str, recipe: Recipe) -> None:
        """Every name a recipe uses must exist and its parameters must be valid (they are
        validated again on use, with the configuration's overrides)."""
        missing = [b.name for b in recipe.builders if b.name not in self.builders]
        missing += [r.name for r in recipe.routes if r.name not in self.routes]
        if recipe.answerer.name not in self.answerers:
            missing.append(recipe.answerer.name)
        if missing:
            raise ConfigError(
                f"recipe {name!r} names parts no design provides: {', '.join(missing)} "
                f"(builders: {sorted(self.builders)}; routes: {sorted(self.routes)})"
            )
        a = recipe.answerer
        parts = [
            ("builder", s.name, self.builders[s.name].Params, s.params) for s in recipe.builders
        ]
        parts += [
            ("route", s.name, self.routes[s.name].Params, self.route_params(recipe, s))
            for s in recipe.routes
        ]
        parts.append(("answerer", a.name, self.answerers[a.name].Params, a.params))
        for what, part, model, params in parts:
            try:
                model.model_validate(params)
            except ValidationError as exc:
                raise ConfigError(
                    f"recipe {name!r}: {what} {part!r}: invalid parameters: {exc}"
                ) from exc

    def recipe(self, name: str) -> Recipe:
        try:
            return self.recipes[name]
        except KeyError:
            raise ConfigError(
                f"unknown recipe {name!r}; choose one of {sorted(self.recipes)}"
            ) from None

    def builder(self, spec: Any) -> Builder:
        return _make(self.builders, "builder", spec.name, spec.params)

    def route_params(self, recipe: Recipe, spec: Any) -> dict[str, Any]:
        """``spec``'s parameters, with the owner of the records it reads filled in.

        A route whose parameters have a ``builder`` field reads that builder's records
        only (designs share a store, not records). When the recipe leaves it out, it is
        the recipe's own builder: the only one, or the only one declaring the route's
        ``kind``. Anything else is ambiguous and refused."""
        params = dict(spec.params)
        model = self.routes[spec.name].Params
        if "builder" not in model.model_fields or params.get("builder"):
            return params
        field = model.model_fields.get("kind")
        kind = params.get("kind", field.default if field is not None else None)
        names = [b.name for b in recipe.builders if b.name in self.builders]
        if len(names) > 1:
            names = [n for n in names if kind in self.builders[n].kinds]
        if len(set(names)) != 1:
            writers = sorted(n for n, b in self.builders.items() if kind in b.kinds)
            raise ConfigError(
                f"recipe {recipe.name!r}: route {spec.name!r} reads {kind!r} records; say "
                f"whose with params.builder (builders that write them: {writers or 'none'})"
            )
        params["builder"] = names[0]
        return params

    def route(
        self, spec: Any, overrides: dict[str, Any] | None = None, recipe: Recipe | None = None
    ) -> Route:
        params = spec.params if recipe is None else self.route_params(recipe, spec)
        return _make(self.routes, "route", spec.name, params, overrides)

    def answerer(self, spec: Any) -> Answerer:
        return _make(self.answerers, "answerer", spec.name, spec.params)

    def readers(self) -> dict[str, type[Reader]]:
        """Designs that can read one document (``memstrata read``), by design name."""
        return {n: d.reader for n, d in self.designs.items() if d.reader is not None}

    def reader(self, name: str | None, params: dict[str, Any] | None = None) -> Reader:
        """The reader of design ``name``; without a name, the only registered one."""
        found = self.readers()
        if name is None:
            if len(found) != 1:
                raise ConfigError(
                    f"choose a reader with --design (or the configuration's reader): "
                    f"{sorted(found) or 'no design has one'}"
                )
            name = next(iter(found))
        if name not in found:
            raise ConfigError(f"design {name!r} has no reader; readers: {sorted(found)}")
        return _make(found, "reader", name, params or {})


def _put(table: dict[str, type[P]], parts: Sequence[type[P]], design: str) -> None:
    for part in parts:
        if part.name in table and table[part.name] is not part:
            raise ConfigError(f"design {design!r}: the name {part.name!r} is already taken")
        table[part.name] = part


def _make(
    table: Mapping[str, type[P]],
    what: str,
    name: str,
    params: dict[str, Any],
    overrides: dict[str, Any] | None = None,
) -> P:
    cls = table[name]
    try:
        model: BaseModel = cls.Params.model_validate({**params, **(overrides or {})})
    except ValidationError as exc:
        raise ConfigError(f"{what} {name!r}: invalid parameters: {exc}") from exc
    return cls(model)
