"""Real-model evidence on `review-tagger`: SmolLM2-135M-Instruct behind llama.cpp, over both protocols.

The seed's matrix items (`pairs` in its seed.toml) measure the transfer from `sim-small` to the real
model with the protocol's defaults, whose direct reference is optimized by the real model itself.
This test adds, on the same recordings (`cassettes/review-tagger/`), over the OpenAI protocol:

* the direct reference with the real model as agent and the simulator `sim-small` as optimizer (the
  source optimization and the transferred skill are the matrix item's: `sim-small` already optimizes
  its own skill), reported in the item's row and snapshot;
* an A/A check: the transferred skill scored a second time on the real model with other sample ids,
  which must show no effect.
"""

import pytest

SEED = "review-tagger"


@pytest.mark.skilltransfer(seed=SEED, source="sim-small", target="smollm2-135m", optimizer="sim-small")
def test_openai_direct_with_a_simulator_optimizer_and_aa_check(transfer_result, transfer_aa):
    assert (transfer_result.direct_optimization.agent_id, transfer_result.direct_optimization.optimizer_id) == (
        transfer_result.target, "sim-small")
    assert transfer_aa.no_effect, transfer_aa.summary()

