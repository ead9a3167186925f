"""Inter-rater agreement (``docs/stats.md#agreement--concordstatsagreement``).

* :mod:`~concord.stats.agreement.matrices`: Krippendorff's α, Fleiss' κ, Kendall's W and
  mean pairwise Spearman on a raters × items matrix;
* :mod:`~concord.stats.agreement.entries`: one group's ratings as (rater, item, value)
  triples, and the statistics that need no matrix;
* :mod:`~concord.stats.agreement.frames`: agreement over the Ratings frame (per group,
  leave one rater out, gold items);
* :mod:`~concord.stats.agreement.intervals`: prompt-bootstrap intervals of α and κ;
* :mod:`~concord.stats.agreement.interval_alpha`: interval α in O(ratings) for continuous
  scales;
* :mod:`~concord.stats.agreement.reliability`: ICC(2,1), ICC(2,k) and weighted κ.

Agreement on pairwise judgments is :mod:`concord.stats.pairs.agreement`; per checklist
condition :mod:`concord.stats.checklist`.
"""
