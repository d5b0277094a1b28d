"""The web app: HTML pages with live htmx views, server-sent event streams and a JSON API.

``app.web.app.create_app`` builds it; nothing outside this package imports from it.
"""
