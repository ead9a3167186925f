"""The SQL of crowd studies (``docs/data-model.md#crowd-tables``).

* :mod:`~concord.store.crowd.links`: study links and the participants who joined;
* :mod:`~concord.store.crowd.joins`: every visit through a link and each participant's
  platform sessions;
* :mod:`~concord.store.crowd.onboarding`: consent, the practice block, completion, and
  the server-side times of the pay report.

The use cases are :mod:`concord.services.crowd`.
"""
