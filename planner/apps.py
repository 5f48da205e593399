from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Planner"
    default_auto_field = "django.db.models.BigAutoField"
