"""Root URLs. Each feature area owns its own URL module, included here."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from ecast import views
from ecast.auth import ThrottledLoginView

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("django-admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("ecast.urls_dataset")),
    path("", include("ecast.imports.urls")),
    path("", include("ecast.generation.urls")),
    path("", include("judging.urls")),
    path("", include("evaluation.urls")),
]
