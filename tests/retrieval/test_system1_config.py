"""``[retrieval]`` in the configuration overrides System-1's knobs one for one."""

from __future__ import annotations

from memstrata.config import Config, RetrievalConfig
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, System1Params


def test_every_knob_is_an_optional_override_with_its_description() -> None:
    fields = RetrievalConfig.model_fields
    assert list(fields) == ["tier", *System1Params.model_fields]
    for name, knob in System1Params.model_fields.items():
        assert fields[name].annotation == knob.annotation | None
        assert fields[name].default is None
        assert fields[name].description == knob.description
        assert knob.description, f"{name} has no description"


def test_an_override_from_the_environment_reaches_the_route_params() -> None:
    cfg = Config.load(
        env={"MEMSTRATA_RETRIEVAL__RRF_K": "33", "MEMSTRATA_RETRIEVAL__DROP_META_TERMS": "false"}
    )
    overrides = cfg.retrieval.model_dump(exclude={"tier"}, exclude_none=True)
    assert overrides == {"rrf_k": 33, "drop_meta_terms": False}
    params = DEFAULT_SYSTEM1.model_copy(update=overrides)
    assert (params.rrf_k, params.drop_meta_terms) == (33, False)
    assert System1Params.model_validate(params.model_dump()) == params
