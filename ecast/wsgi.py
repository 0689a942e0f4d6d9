import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ecast.settings")
application = get_wsgi_application()
# Every view module is imported now, while the process starts, instead of by its first request: a gunicorn worker
# accepts connections only once this module is loaded, so no rater waits half a second or more for the imports of
# a freshly started worker (which hold the GIL that worker's other threads need too).
get_resolver().url_patterns  # noqa: B018
