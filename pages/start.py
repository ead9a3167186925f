"""Before the first item: instructions and consent, the questions before the items (a
study's questionnaire), then the practice block; the end screen for a rater who did not
pass it, or whose session ended (too many skips or failed attention checks)."""

import streamlit as st

from concord.services import questionnaire
from concord.ui import onboarding_view, questionnaire_view, session, signin, widgets

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("You have no study yet.")
    st.stop()
widgets.rater_style()
stage = signin.onboarding_stage(session.db(), user)
if stage == "before":
    questionnaire_view.form(study, user.rater_id, "before", questionnaire.open_part(
        session.db(), study, user.rater_id, "before"))
elif stage == "practice":
    # The feedback on the last practice item stays on screen until the rater goes on.
    onboarding_view.practice(study, user.rater_id)
elif stage == "consent":
    onboarding_view.consent(study, user.rater_id)
elif stage in ("failed", "screened", "blocked"):
    onboarding_view.ended(study, user.rater_id)
else:
    st.rerun()  # nothing to do here any more: app.py shows the rating screens
