"""Real-model evidence on `review-tagger`: SmolLM2-135M-Instruct behind llama.cpp.

The seeds' matrix items (`pairs` in their seed.toml) measure the transfer from `sim-small` to the real
model over both protocols, with a direct reference whose agent is the real model and whose optimizer
is `sim-small` (`optimizer` in their seed.toml). Each held-out review is checked for its own sentiment and
topic beside the format, so a constant answer passes at most 5 of the 24. `review-tagger` sends each task
alone: no effect (0/24 in every arm); `review-tagger-context` sends the same tasks after one fixed worked
example (its `context.jsonl`): no effect shown (7/24 -> 4/24); `review-tagger-other-example` sends them after
one fixed movie-review example that shows the answer's shape but not the dashboard's values: no effect shown
(1/24 -> 4/24; the learned template gives the format, not the labels). These tests add, on the same
recordings (`cassettes/<seed>/`), an A/A check over the OpenAI protocol: the transferred skill scored twice on
the real model, sampled at temperature 0.8 with other sample ids (seeds), which must show no effect and can fail.
"""

import pytest

# Both scorings of each A/A check sample at this temperature, each call seeded by its sample id, so the two
# scorings give other answers and the check can fail (greedy decoding would repeat the same 24 answers).
AA_SAMPLED = pytest.mark.skilltransfer_aa(temperature=0.8)


def _direct_optimizer_is_the_seeds(transfer_result) -> None:
    """The direct reference, when it ran, was optimized by the seed's `optimizer` (sim-small); with
    `--transfer-direct-on-demand` it is skipped where the gain is already shown."""
    direct = transfer_result.direct_optimization
    assert (direct is None and transfer_result.direct_skipped) or direct.optimizer_id == "sim-small"


@AA_SAMPLED
@pytest.mark.skilltransfer(seed="review-tagger", source="sim-small", target="smollm2-135m")
def test_aa_check_on_the_real_model(transfer_result, transfer_aa):
    _direct_optimizer_is_the_seeds(transfer_result)
    assert transfer_aa.no_effect, transfer_aa.summary()


@AA_SAMPLED
@pytest.mark.skilltransfer(seed="review-tagger-context", source="sim-small", target="smollm2-135m")
def test_aa_check_on_the_real_model_with_a_fixed_context(transfer_result, transfer_aa):
    _direct_optimizer_is_the_seeds(transfer_result)
    assert transfer_aa.no_effect, transfer_aa.summary()


@AA_SAMPLED
@pytest.mark.skilltransfer(seed="review-tagger-other-example", source="sim-small", target="smollm2-135m")
def test_aa_check_on_the_real_model_with_an_example_from_another_domain(transfer_result, transfer_aa):
    _direct_optimizer_is_the_seeds(transfer_result)
    assert transfer_aa.no_effect, transfer_aa.summary()


# The real-model result, per protocol, now that each held-out review is checked for its own labels: no gain on the
# task is shown (+0.12 [-0.03, +0.33], 1/24 -> 4/24), and the harm gate every item has holds. The learned template
# makes the model write the dashboard's two label lines (format 8/24 -> 23/24), every one `Sentiment: Positive`: right
# on the 8 positive reviews only (docs/models.md). These tests hold both halves of that reading.
@pytest.mark.skilltransfer(seed="review-tagger-other-example", source="sim-small", target="smollm2-135m")
def test_the_learned_skill_gives_the_real_model_the_format_not_the_labels_over_the_openai_protocol(transfer_result):
    assert transfer_result.transferred.soft.mean > transfer_result.baseline.soft.mean  # more of the checks pass ...
    assert transfer_result.gain.low <= 0.0  # ... but a gain in right labels is not shown


@pytest.mark.skilltransfer(seed="review-tagger-other-example", source="sim-small", target="smollm2-135m-anthropic")
def test_the_learned_skill_gives_the_real_model_the_format_not_the_labels_over_the_anthropic_protocol(transfer_result):
    assert transfer_result.transferred.soft.mean > transfer_result.baseline.soft.mean
    assert transfer_result.gain.low <= 0.0
