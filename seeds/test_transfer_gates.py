"""Hand-written gates next to the auto-collected matrix: the same fixture, stricter thresholds.

The cheap-to-expensive direction is the product's promise, so it is gated here explicitly;
the reverse direction is measured by the matrix but not required to gain. A gate passes only when
the exact 95% interval clears its threshold: over six held-out tasks that can show a positive gain
and a score above one half; a stricter threshold would be inconclusive, and its message says how
many held-out tasks would decide it.
"""

import pytest


@pytest.mark.skilltransfer(seed="ticket-router", source="sim-small", target="sim-large", min_gain=0.0, min_score=0.5)
def test_router_skill_learned_on_the_small_model_helps_the_large_one(transfer_result):
    assert transfer_result.transferred.hard.mean > transfer_result.baseline.hard.mean
    assert "<!-- skilltransfer:learned start -->" in transfer_result.learned.learned_skill
