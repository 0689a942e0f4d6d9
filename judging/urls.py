from django.urls import include, path

urlpatterns: list = [
    path("", include("judging.rating.urls")),
    path("", include("judging.relevance.urls")),
    path("", include("judging.ptkb.urls")),
    path("", include("judging.llm.urls")),
    path("", include("judging.nuggets.urls")),
]
