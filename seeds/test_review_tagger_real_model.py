"""Real-model evidence on `review-tagger`: SmolLM2-135M-Instruct behind llama.cpp.

The seeds' matrix items (`pairs` in their seed.toml) measure the transfer from `sim-small` to the real
model over both protocols, with a direct reference whose agent is the real model and whose optimizer
is `sim-small` (`optimizer` in their seed.toml). `review-tagger` sends each task alone, and shows no
effect (an honest null); `review-tagger-context` sends the same tasks after one fixed worked example
(its `context.jsonl`), also a null; `review-tagger-other-example` sends them after one fixed movie-review
example that shows the answer's shape but not the dashboard's values, and there the learned skill helps
(+0.62 [+0.39, +0.81] on both protocols). These tests add, on the same recordings (`cassettes/<seed>/`), an A/A check over
the OpenAI protocol: the transferred skill scored a second time on the real model with other sample
ids, which must show no effect.
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


# The gate: the learned skill's gain on the real model clears +0.1 with its exact interval at the run family's level
# (Bonferroni over the run's 40 items: 99.875%, [+0.18, +0.90]), per protocol. The seed's held-out checks are
# format-only (a constant answer passes them): the gain is the answer's shape, not a right label (docs/models.md).
@pytest.mark.skilltransfer(seed="review-tagger-other-example", source="sim-small", target="smollm2-135m", min_gain=0.1)
def test_the_learned_skill_helps_the_real_model_over_the_openai_protocol(transfer_result):
    assert transfer_result.transferred.hard.mean > transfer_result.baseline.hard.mean


@pytest.mark.skilltransfer(seed="review-tagger-other-example", source="sim-small", target="smollm2-135m-anthropic",
                           min_gain=0.1)
def test_the_learned_skill_helps_the_real_model_over_the_anthropic_protocol(transfer_result):
    assert transfer_result.transferred.hard.mean > transfer_result.baseline.hard.mean
