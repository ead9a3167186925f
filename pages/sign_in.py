"""Sign-in: raters arrive with an invite link; researchers enter the admin secret."""

from concord.ui import session, signin

session.through_app()
signin.form(session.db())
