"""Root URLs: the dashboard at /, the API at /api/v1/, its schema and docs, the admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from dashboard.login import AdminLoginForm, LoginView

# both sign-in forms lock out after repeated wrong passwords (api/throttling.py)
admin.site.login_form = AdminLoginForm

# JSON error answers under /api/ (api/errors.py)
handler404 = "api.errors.not_found"
handler500 = "api.errors.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("", include("dashboard.urls")),
]
