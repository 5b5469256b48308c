"""An item's record reads and writes its JSON from its field declarations alone: a key is one field."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

from plugin_support import NO_GAIN, item_record
from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.item_record import GainRecord, ItemRecord, RecordError
from pytest_skilltransfer.evidence.json_record import optional


def test_a_key_some_items_lack_is_left_out_and_one_that_comes_with_another_is_written_with_it() -> None:
    plain = stats.paired_gain([0.0] * 6, [1.0] * 6).as_dict()
    clustered = stats.clustered_gain([0.0] * 6, [[1.0] * 6], ["a", "a", "b", "b", "c", "c"]).as_dict()
    assert "unit" not in plain and clustered["unit"] == "cluster"
    for data in (plain, clustered):
        assert json.dumps(GainRecord.from_json(data).to_json()) == json.dumps(data)
    assert item_record().to_json().keys().isdisjoint({"gate", "family", "item", "portable", "judge"})


def test_keys_it_does_not_know_are_kept_and_keys_an_earlier_version_lacked_stay_out() -> None:
    newer = {**item_record().to_json(), "looks": 3, "stopped_at": {"look": 2}}
    record = ItemRecord.from_json(newer)
    assert record.extra == {"looks": 3, "stopped_at": {"look": 2}} and record.to_json() == newer
    older = {"seed": "a", "source": "s", "target": "t", "baseline_target": 0.0, "transferred": 0.5, "gain": NO_GAIN}
    assert ItemRecord.from_json(older).to_json() == older
    assert ItemRecord.from_json(older).direct_skipped is False  # what it lacked reads as its default
    gated = replace(ItemRecord.from_json(older), item="seeds/a::transfer[s->t]")
    assert gated.to_json() == {**older, "item": "seeds/a::transfer[s->t]"}  # a value set later is written


def test_adding_a_key_is_one_field() -> None:
    @dataclass(frozen=True, kw_only=True)
    class WithLooks(ItemRecord):
        looks: int | None = optional()

    record = WithLooks.from_json({**item_record().to_json(), "looks": 3})
    assert record.looks == 3 and not record.extra and record.to_json()["looks"] == 3
    assert "looks" not in WithLooks.from_json(item_record().to_json()).to_json()


def test_what_cannot_be_read_is_a_clear_error() -> None:
    with pytest.raises(RecordError, match="ItemRecord: the key 'gain' is missing"):
        ItemRecord.from_json({"seed": "a", "source": "s", "target": "t", "baseline_target": 0, "transferred": 0})
    with pytest.raises(RecordError, match=r"ItemRecord.scores: expected a JSON object, got list"):
        item_record(scores=[])
    with pytest.raises(RecordError, match="record_version 2; this version of pytest-skilltransfer reads up to 1"):
        item_record(record_version=2)
