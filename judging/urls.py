from django.urls import include, path

urlpatterns: list = [
    # judging.rating.urls is listed first in the root URLconf (ecast.urls says why).
    path("", include("judging.relevance.urls")),
    path("", include("judging.ptkb.urls")),
    path("", include("judging.llm.urls")),
    path("", include("judging.nuggets.urls")),
]
