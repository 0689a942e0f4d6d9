from django.urls import include, path

urlpatterns: list = [
    path("", include("judging.urls_rating")),
    path("", include("judging.urls_relevance")),
]
