"""``manage.py planner demo`` loads demo data; ``manage.py planner token USER`` prints a token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

DEMO_EXPERIMENT = "Demo: FIFO vs Tiresias vs Gavel on a mixed-GPU cluster"
PHILLY_SAMPLE = Path(__file__).resolve().parents[3] / "clustersim/data/demo/philly_sample.csv"
#: The demo's cluster: three generations of GPUs (32 each) in a region with hourly carbon
#: data. The Philly sample (2,406 jobs, up to 64-GPU gangs) keeps it contended at any of the
#: demo's loads, so the policies differ visibly: FIFO's head-of-line blocking behind large
#: gangs against Tiresias' and Gavel's preemptive least-attained-service orders.
DEMO_CLUSTER = {
    "name": "demo-mixed",
    "pools": [
        {"name": "k80", "accelerator": "K80", "nodes": 4, "devices_per_node": 8, "rack": "k80"},
        {"name": "v100", "accelerator": "V100", "nodes": 4, "devices_per_node": 8, "rack": "v100"},
        {"name": "a100", "accelerator": "A100", "nodes": 4, "devices_per_node": 8, "rack": "a100"},
    ],
    "racks": [{"name": "k80"}, {"name": "v100"}, {"name": "a100"}],
    "regions": [{"name": "california", "carbon_zone": "US-CAL-CISO"}],
}
DEMO_CLUSTER_NAME = "Demo: K80 + V100 + A100 (California grid)"
DEMO_POLICIES = ("fifo", "tiresias", "gavel-las")
DEMO_LOADS = (0.5, 1.0, 2.0)


class Command(BaseCommand):
    help = "Planner utilities: `demo` (load demo data), `token USER` (print an API token)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        demo = sub.add_parser(
            "demo", help="presets, a mixed-GPU cluster, the Philly sample, one finished experiment"
        )
        demo.add_argument("--username", default="demo")
        demo.add_argument(
            "--password",
            default=None,
            help="password of the demo user when it is created (default: the username; "
            "refused with DEBUG off)",
        )
        token = sub.add_parser("token", help="print (creating if needed) a user's API token")
        token.add_argument("username")
        token.add_argument("--create-user", action="store_true", help="create the user too")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["action"] == "demo":
            self.demo(opts["username"], opts["password"])
        else:
            self.token(opts["username"], opts["create_user"])

    def token(self, username: str, create: bool) -> None:
        from rest_framework.authtoken.models import Token

        User = get_user_model()
        if create:
            user, _ = User.objects.get_or_create(username=username)
        else:
            try:
                user = User.objects.get(username=username)
            except User.DoesNotExist:
                raise CommandError(f"no user {username!r} (use --create-user)") from None
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)

    def demo(self, username: str, password: str | None) -> None:
        from clustersim.presets import PRESETS, preset_spec
        from planner import parsing, runner, services
        from planner.models import Cluster, Experiment, Workload, WorkloadStatus

        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            if password is None and not settings.DEBUG:
                raise CommandError("give --password (DEBUG is off, no default password)")
            user = User.objects.create_user(username, password=password or username)
            self.stdout.write(f"created user {username!r}")
        for name in PRESETS:
            if not Cluster.objects.filter(owner=user, preset=name).exists():
                services.create_cluster(
                    user,
                    name,
                    preset_spec(name),
                    preset=name,
                    description=PRESETS[name].description,
                )
        workload = Workload.objects.filter(owner=user, name="Philly sample").first()
        if workload is None:
            with transaction.atomic():
                workload = services.create_workload(
                    user,
                    name="Philly sample",
                    filename=PHILLY_SAMPLE.name,
                    raw=PHILLY_SAMPLE.read_bytes(),
                    description="2,406 jobs sampled from the Microsoft Philly trace",
                    enqueue=False,
                )
        if workload.status != WorkloadStatus.READY:
            parsing.parse_workload(workload.pk)
            workload.refresh_from_db()
        if workload.status != WorkloadStatus.READY:
            raise CommandError(f"the Philly sample did not parse: {workload.error}")
        self.stdout.write(f"workload {workload.name!r}: {workload.summary['jobs']} jobs")
        if Experiment.objects.filter(owner=user, name=DEMO_EXPERIMENT).exists():
            self.stdout.write("demo experiment already there")
            return
        cluster = Cluster.objects.filter(owner=user, name=DEMO_CLUSTER_NAME).first()
        if cluster is None:
            cluster = services.create_cluster(
                user,
                DEMO_CLUSTER_NAME,
                DEMO_CLUSTER,
                description="32 K80, 32 V100 and 32 A100 GPUs on 8-GPU servers, one rack per "
                "type, in California (hourly carbon intensity of US-CAL-CISO).",
            )
        exp = services.create_experiment(
            user,
            name=DEMO_EXPERIMENT,
            clusters=[cluster],
            workloads=[workload],
            policies=[{"name": p, "params": {}} for p in DEMO_POLICIES],
            load_factors=list(DEMO_LOADS),
            seeds=[0],
            enqueue=False,
        )
        for pk in exp.runs.values_list("pk", flat=True):
            outcome = runner.execute_run(pk, worker="manage.py planner demo")
            self.stdout.write(f"run {pk}: {outcome}")
        exp.refresh_from_db()
        self.stdout.write(f"demo experiment {exp.pk}: {exp.state}")
