"""Exact small-sample statistics for scores in [0, 1] and paired gains between two scorings of one task set.

One rule for every sample count. The unit is the held-out task; a task's value is the mean of its
samples' hard scores, a number in [0, 1]. Intervals and tests never switch method with the number
of samples or tasks:

* Score interval: Clopper-Pearson on the sum of task values, S = sum(x), n tasks, in its Beta form
  `[Beta(a/2; S, n-S+1), Beta(1-a/2; S+1, n-S)]`. With binary tasks (one sample each) it *is* the
  exact binomial interval; with task means it is the same formula at a fractional S. A variable in
  [0, 1] with mean mu is dominated in the convex order by a Bernoulli(mu) variable, so task means are
  never more dispersed than the binary case; the seeded coverage simulation in the test suite checks
  coverage >= 0.93 for binary tasks and for task means over several samples. More samples shrink the
  spread of task values and so narrow the interval; they never change the method.
* Paired gain (after - before per task, in [-1, 1]): one exact test gives both the p-value and the
  interval (`paired_exact`): the exact unconditional test of the gain ordered by Tango's score
  statistic, maximised over the nuisance; the interval is every gain it does not reject, the p-value
  of "no effect" is the same test at 0, so p <= 0.05 exactly when the interval excludes 0. Ties
  (unchanged tasks) keep their information, which makes it about half as wide as Clopper-Pearson
  on (d + 1) / 2. Above `N_EXACT` tasks the same statistic is referred to the normal distribution
  (the asymptotic Tango score interval and test, still one construction), and the method says so.
* Clustered tasks (`clustered_gain`, `clustered_score`): when held-out tasks share clusters (a
  topic, paraphrases of one question), the unit is the cluster: task values are averaged within
  each cluster and the same constructions run on the C cluster means, so the estimand is the mean
  over clusters. The design effect compares the two variances of the mean. Without a cluster of two
  or more tasks nothing changes.
* Gates compare the interval with a threshold (`decide`): pass when the whole interval is at or
  above it, fail when the whole interval is below it, inconclusive otherwise. Each side errs with
  probability at most (1 - level) / 2.

Everything here is exact arithmetic with `math` (regularized incomplete beta by continued fraction,
bisection); nothing is random.

The code is in `score_intervals`, `gain_tests` (intervals and p-values of a paired gain), `power`, `gains` (the Gain
a report shows) and `family` (Holm, regression); this module re-exports their public names so callers import the
statistics from one place.
"""

from .score_intervals import (  # noqa: F401 (re-exported)
    CLUSTER_UNIT, EPSILON, Estimate, FAIL, GAIN_METHOD, GAIN_METHOD_LARGE, HURTS, INCONCLUSIVE, LEVEL, MAX_TASKS,
    NO_EFFECT, N_EXACT, PASS, POWER, RESTART_GAIN_METHOD, SCORE_METHOD, TASK_UNIT, TRANSFERS, beta_cdf,
    beta_quantile, decide, interval_of_sum, mean, outcome, score,
)
from .gain_tests import (  # noqa: F401 (re-exported)
    GAIN_SPAN, SCORE_SPAN, cluster_count, cluster_keys, cluster_means, clustered_score, design_effect,
    difference_interval, difference_interval_of_mean, first_bounds_of, gain_bounds, gain_bounds_of, gain_decision,
    gain_interval, gain_method, gain_p_value, is_clustered, mean_gain_interval, moves, part_level, restart_count_of,
    restart_interval, restart_margins, restart_p_value, restart_score, restart_span, score_bounds, these_bounds_of,
    undecidable_units, units_needed,
)
from .power import (  # noqa: F401 (re-exported)
    bounds, detection_power, gain_tasks_to_decide, minimal_detectable_gain, minimal_detectable_net_gain,
    mixed_detection_power, tasks_for_gain, tasks_to_decide, tasks_to_pass,
)
from .gains import (  # noqa: F401 (re-exported)
    Gain, Ratio, clustered_gain, efficiency_ratio, paired_gain, restart_gain,
)
from .family import (  # noqa: F401 (re-exported)
    Regression, holm, regression, seeds_needed,
)
