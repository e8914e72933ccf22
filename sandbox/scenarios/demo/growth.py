"""The demo's second act: hot partitions reproduced on the emulator, alarmed, grown, healed.

The replay of :mod:`sandbox.scenarios.demo` runs again, this time through the partition
emulator (:mod:`sandbox.emulator`) with every key starting at one shard. Each origin
key then wants more than a partition's (scaled) key-range limit, so DynamoDB's answer
appears: ``ProvisionedThroughputExceededException`` with
``TableWriteKeyRangeThroughputExceeded`` (and ``IndexWriteKeyRangeThroughputExceeded``
for GSI1). The throttle alarms of the CDK stack (``infra/alarm_specs.py``), evaluated
locally by :class:`sandbox.local_aws.alarms.LocalAlarm` over the emulator's per-minute figures,
invoke the real scaler handler, which reads the emulator's Contributor-Insights-like
top-N through its :class:`HotKeySource` port and grows the shard counts. Writers pick
the new count up when their cached count expires, and throughput recovers.

This module holds the parts of that act that are not the replay itself:

- :class:`GrowthSettings`: the emulator's scale and the functions' settings for the act;
- :class:`GrowthLoop`: the emulator, the alarms and the scaler, started and stopped
  together on one (optionally accelerated) clock;
- :func:`shard_history`: each key's shard counts read back, on the act's wall clock.

The act's once-a-second figures, their report and chart are in
:mod:`sandbox.scenarios.demo.timeline`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from dynashard import defaults, names
from dynashard.planning.shards import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT
from sandbox.sessions import client_sessions

#: The scaler's handler, as the template names its code.
SCALER_HANDLER = "functions.scaler.app:handler"

if TYPE_CHECKING:
    from dynashard import Dynashard
    from sandbox.clock import AcceleratedClock
    from sandbox.emulator import EmulatorServer
    from sandbox.emulator.inprocess import InProcessEmulator
    from sandbox.local_aws.alarms import LocalAlarm, LocalSchedule
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.local_aws.logs import LocalWriteLoadRules, LogTap
    from sandbox.twin import LocalTwin


@dataclass(frozen=True)
class GrowthSettings:
    """How hot the second act runs.

    Parameters
    ----------
    scale : float
        Factor on DynamoDB's key-range limits in the emulator: ``0.1`` gives each
        partition key value 100 WCU/s and 300 RCU/s, which the replay exceeds from
        one shard on a laptop.
    speed : float
        Emulated seconds per wall second (``1`` is real time). The emulator, the alarms
        and the scaler's cooldown run on this clock, so a CloudWatch minute passes in
        ``60 / speed`` wall seconds; the writers' cache lifetime is shortened alike.
    cooldown_s : float or None
        Emulated seconds between two growths of one key; None (the default): the
        stack's (the template's ``DYNASHARD_COOLDOWN_S``, see :meth:`with_stack`).
    metadata_cache_ttl_s : float or None
        Emulated seconds a writer caches a key's shard count; None: the stack's.
    target_utilization : float
        Share of a partition's limit each shard is planned to carry, in (0, 1].
    max_shards : int
        Upper bound of any key's shard count.
    in_band_growth : bool or None
        Whether throttled writers also grow keys themselves; None (the default): as
        the stack deploys the functions (the template's ``DYNASHARD_IN_BAND_GROWTH``,
        else the functions' own default).
    shrink_cool_period_s : float or None
        Emulated seconds a key's offered load must stay cool before the sweep shrinks
        it; None: the stack's. The sweep shrinks only once the act's write-load
        rule has watched a whole cool period (:func:`sandbox.local_aws.alarms.scaler_action`), so
        an act shorter than this (the second act lasts about 7 minutes at x1 or x2
        time) never shrinks a key.

    Raises
    ------
    ValueError
        If ``scale`` or ``speed`` is not positive.
    """

    scale: float = 0.1
    speed: float = 1.0
    cooldown_s: float | None = None
    metadata_cache_ttl_s: float | None = None
    target_utilization: float = defaults.TARGET_UTILIZATION.default
    max_shards: int = 64
    in_band_growth: bool | None = None
    shrink_cool_period_s: float | None = None

    def __post_init__(self) -> None:
        if self.scale <= 0 or self.speed <= 0:
            raise ValueError(f"scale and speed must be > 0, got {self.scale}, {self.speed}")

    @property
    def partition_wcu(self) -> float:
        """float: The emulated key-range write limit, WCU per emulated second."""
        return PARTITION_WCU_LIMIT * self.scale

    @property
    def partition_rcu(self) -> float:
        """float: The emulated key-range read limit, RCU per emulated second."""
        return PARTITION_RCU_LIMIT * self.scale

    def function_environment(self) -> dict[str, str]:
        """Return the functions' settings for the act (added to the sandbox environment).

        Returns
        -------
        dict of str to str
            Scaled partition limits (the scaler plans with them), target utilization,
            maximum shard count, in-band growth switch, shrink cool period, and the
            writers' cache lifetime in wall seconds (their clock is the wall clock).
        """
        env = {
            names.ENV_PARTITION_WCU: str(self.partition_wcu),
            names.ENV_PARTITION_RCU: str(self.partition_rcu),
            names.ENV_TARGET_UTILIZATION: str(self.target_utilization),
            names.ENV_MAX_SHARDS: str(self.max_shards),
        }
        # The stack's own values are given only once resolved (with_stack); the cache
        # lifetime always in wall seconds (the writers' clock is the wall clock).
        if self.cooldown_s is not None:
            env[names.ENV_COOLDOWN_S] = str(self.cooldown_s)
        if self.metadata_cache_ttl_s is not None:
            env[names.ENV_METADATA_CACHE_TTL_S] = str(self.metadata_cache_ttl_s / self.speed)
        if self.shrink_cool_period_s is not None:
            env[names.ENV_SHRINK_COOL_PERIOD_S] = str(self.shrink_cool_period_s)
        if self.in_band_growth is not None:
            env[names.ENV_IN_BAND_GROWTH] = str(self.in_band_growth).lower()
        return env

    def with_stack(self, stack_environment: Mapping[str, str]) -> GrowthSettings:
        """Return these settings with every unset one taken from the stack.

        Parameters
        ----------
        stack_environment : mapping of str to str
            The template's environment of the scaler (``DYNASHARD_COOLDOWN_S``,
            ``DYNASHARD_METADATA_CACHE_TTL_S``, ``DYNASHARD_SHRINK_COOL_PERIOD_S``).

        Returns
        -------
        GrowthSettings
            A copy; what the act set stays as set.
        """

        def stack(value: float | None, name: str) -> float:
            return float(stack_environment[name]) if value is None else value

        return dataclasses.replace(
            self,
            cooldown_s=stack(self.cooldown_s, names.ENV_COOLDOWN_S),
            metadata_cache_ttl_s=stack(self.metadata_cache_ttl_s, names.ENV_METADATA_CACHE_TTL_S),
            shrink_cool_period_s=stack(self.shrink_cool_period_s, names.ENV_SHRINK_COOL_PERIOD_S),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the settings and the limits they give, for the report.

        Returns
        -------
        dict
            The fields plus ``partition_wcu`` and ``partition_rcu``.
        """
        return {
            "scale": self.scale,
            "speed": self.speed,
            "partition_wcu": self.partition_wcu,
            "partition_rcu": self.partition_rcu,
            "cooldown_s": self.cooldown_s,
            "metadata_cache_ttl_s": self.metadata_cache_ttl_s,
            "target_utilization": self.target_utilization,
            "max_shards": self.max_shards,
            "in_band_growth": self.in_band_growth,
        }


class GrowthLoop:
    """The emulator, the scaler alarms and the scaler, as one context manager.

    On enter it starts the partition emulator in front of DynamoDB Local, one
    :class:`~sandbox.local_aws.alarms.LocalAlarm` per entry of ``SCALER_ALARMS``, each evaluated
    every wall second and invoking the scaler handler on a transition into ``ALARM``,
    and the stack's sweep (:class:`~sandbox.local_aws.alarms.LocalSchedule`, every emulated
    minute), which invokes the scaler for the alarms that stayed in ``ALARM``. The
    scaler grows keys through a facade on the emulated clock, so its cooldown is in
    emulated seconds.

    Parameters
    ----------
    upstream_url : str
        DynamoDB Local's endpoint.
    data_table, metadata_table : str
        The act's tables (already created).
    settings : GrowthSettings
        Scale, speed and the functions' settings.
    in_process : bool
        True (the default): the emulator charges the functions' and the scaler's
        requests in this process (:class:`~sandbox.emulator.inprocess.InProcessEmulator`
        installed on boto3's default session; the functions' endpoint is DynamoDB
        Local's own), without an HTTP hop; False: through its HTTP endpoint. Either way
        one model: the same buckets, figures and admin routes. Clients created before
        enter (the act's uncharged observer) are not wired.

    Examples
    --------
    >>> with GrowthLoop(ddb.endpoint_url, "d", "m", GrowthSettings()) as loop:  # doctest: +SKIP
    ...     env = loop.function_environment()
    """

    def __init__(
        self,
        upstream_url: str,
        data_table: str,
        metadata_table: str,
        settings: GrowthSettings,
        *,
        in_process: bool = True,
    ) -> None:
        self.upstream_url = upstream_url
        self.in_process = in_process
        self._in_process: InProcessEmulator | None = None
        self.data_table = data_table
        self.metadata_table = metadata_table
        self.settings = settings
        self.clock: AcceleratedClock | None = None
        self.server: EmulatorServer | None = None
        self.alarms: list[LocalAlarm] = []
        self.sweep: LocalSchedule | None = None
        self.write_load_rule: LocalWriteLoadRules | None = None
        self._log_taps: list[LogTap] = []
        self.twin: LocalTwin | None = None
        self.scaler: LocalFunction | None = None
        self.started_wall = 0.0

    @property
    def alarm_names(self) -> list[str]:
        """List of str: The names of the local scaler alarms (after enter)."""
        return [alarm.name for alarm in self.alarms]

    def function_environment(self) -> dict[str, str]:
        """Return the functions' environment for the act, pointed at the emulator.

        Returns
        -------
        dict of str to str
            :func:`sandbox.env_vars.function_environment` of the loop's twin (the
            template's variables, the scaler's alarm names included: the local alarms
            carry the deployed names), with :meth:`GrowthSettings.function_environment`
            on top (each a local override the twin reports).
        """
        from sandbox.env_vars import function_environment

        return function_environment(
            self.endpoint_url,
            data_table=self.data_table,
            metadata_table=self.metadata_table,
            extra=self.settings.function_environment(),
            twin=self.twin,
        )

    @property
    def endpoint_url(self) -> str:
        """str: The endpoint the functions and the scaler use (after enter).

        DynamoDB Local's own when the emulator runs in process (its hook charges the
        requests), else the emulator's HTTP endpoint.
        """
        if self.server is None:
            raise RuntimeError("the growth loop is not started")
        return self.upstream_url if self.in_process else self.server.endpoint_url

    def __enter__(self) -> GrowthLoop:
        from dynashard import Dynashard, DynashardConfig
        from sandbox.clock import AcceleratedClock
        from sandbox.emulator import EmulatorConfig, EmulatorServer
        from sandbox.engines.dynamodb_local import local_client
        from sandbox.env_vars import local_twin
        from sandbox.local_aws.alarms import (
            LocalAlarm,
            LocalAlarmStates,
            LocalSchedule,
            scaler_action,
        )
        from sandbox.local_aws.logs import LocalInsightRule, LocalWriteLoadRules, LogTap
        from sandbox.twin.iam import install_default, role_scope

        twin = self.twin = local_twin(self.data_table, self.metadata_table)
        # The act's own choices, the rest (cooldown, cache lifetime, cool period) the stack's.
        self.settings = s = self.settings.with_stack(self._environment_of(SCALER_HANDLER))
        if s.cooldown_s is None:  # with_stack sets every unset value
            raise RuntimeError("the act's cooldown was not resolved from the stack")
        install_default()
        scaler = self.scaler = twin.function(SCALER_HANDLER)
        self.clock = clock = AcceleratedClock(speed=s.speed)
        self.started_wall = time.monotonic()
        # The metadata table keeps DynamoDB's real key-range ceilings: its traffic (the
        # writers' per-bucket GSI1 records, the scaler's conditional updates) is not
        # scaled down with the data table's.
        config = EmulatorConfig(
            scale=s.scale, clock=clock, unscaled_tables=frozenset({self.metadata_table})
        )
        self.server = EmulatorServer(self.upstream_url, config)
        self.server.start()
        if self.in_process:
            self._in_process = self.server.in_process()
            # Every DynamoDB client the functions' and the library's sessions create
            # from now on (the functions' facades, the grower's below) is charged in
            # process.
            for session in client_sessions():
                self._in_process.install(session, max_pool_connections=64)
        # The scaler's facade, on the emulated clock (its cooldown is emulated seconds);
        # its client is created as the scaler's, so every call is checked against its role.
        with role_scope(scaler.role):
            grower = Dynashard(
                DynashardConfig(
                    self.data_table,
                    self.metadata_table,
                    max_shards=s.max_shards,
                    cooldown_s=s.cooldown_s,
                    endpoint_url=self.endpoint_url,
                    partition_wcu=s.partition_wcu,
                    partition_rcu=s.partition_rcu,
                    target_utilization=s.target_utilization,
                ),
                client=local_client(self.endpoint_url),
            )
        grower.metadata.clock = clock
        # The stack's write-load rules, one per part of the key space (their bodies from
        # the template, in the scaler's order), on the log lines of the functions whose
        # log groups they read, stamped on the act's clock.
        rule_names = self._environment_of(SCALER_HANDLER)[names.ENV_WRITE_LOAD_RULE].split(",")
        rules: list[LocalInsightRule] = []
        writers: set[str] = set()
        for rule_name in rule_names:
            body, readers = twin.insight_rule_body(rule_name)
            rules.append(LocalInsightRule(body, clock=clock))
            writers.update(readers)
        loggers = sorted(
            {self._environment_of(h)[names.ENV_POWERTOOLS_SERVICE_NAME] for h in writers}
        )
        self.write_load_rule = LocalWriteLoadRules(rules)
        self._log_taps = [LogTap(name, rules).__enter__() for name in loggers]
        states = LocalAlarmStates()
        action = scaler_action(
            self.server.emulator,
            grower,
            alarm_states=states,
            offered_load=self.write_load_rule,
            load_history=self.write_load_rule,
            shrinker=grower,
            function=scaler,
            write_load_rule=rule_names,
        )
        metrics = self.server.emulator.metrics
        # The template's alarms whose action invokes the scaler, under their deployed names.
        self.alarms = [
            LocalAlarm(
                spec, twin.alarm_table(spec.id), metrics, action, clock=clock, alarm_name=name
            )
            for name, spec in twin.scaler_alarms(SCALER_HANDLER)
        ]
        states.alarms.extend(self.alarms)
        self.sweep = LocalSchedule(action, rate_s=twin.sweep_rate_s(SCALER_HANDLER), clock=clock)
        for alarm in self.alarms:
            alarm.start(interval_s=1.0, max_duration_s=24 * 3600.0)
        self.sweep.start(interval_s=1.0)
        return self

    def _environment_of(self, handler: str) -> dict[str, str]:
        """Return the template's environment of the function with this handler."""
        if self.twin is None:
            raise RuntimeError("the growth loop is not started")
        return self.twin.function_environment(self.twin.function_spec(handler).logical_id)

    def stop_scaling(self) -> None:
        """Stop the alarms and the sweep (idempotent); the emulator keeps serving.

        Call it before leaving the functions' environment, so that no scaler
        invocation runs on settings from another environment.
        """
        if self.sweep is not None:
            self.sweep.stop()
        for alarm in self.alarms:
            alarm.stop()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_scaling()
        for tap in self._log_taps:
            tap.__exit__(exc_type, exc, tb)
        self._log_taps = []
        if self._in_process is not None:
            for session in client_sessions():
                self._in_process.uninstall(session)
            self._in_process = None
        if self.server is not None:
            self.server.stop()

    def log_tap_errors(self) -> list[str]:
        """Return the errors of the log tap that feeds the write-load rule (at most 10).

        Returns
        -------
        list of str
            Errors met while formatting or evaluating the functions' log lines.
        """
        return [error for tap in self._log_taps for error in tap.errors]

    def throttle_reasons(self) -> dict[str, int]:
        """Return the throttle events by reason so far.

        Returns
        -------
        dict of str to int
            ``ThrottlingReason.reason`` -> events.
        """
        if self.server is None:
            return {}
        return self.server.emulator.metrics.throttle_reasons()

    def emulated_to_wall_s(self, epoch_s: float) -> float:
        """Convert an emulated epoch time to wall seconds since the loop started.

        Parameters
        ----------
        epoch_s : float
            Emulated epoch seconds (e.g. a metadata ``since``).

        Returns
        -------
        float
            Wall seconds after enter (negative before it).
        """
        if self.clock is None:
            raise RuntimeError("the growth loop is not started")
        return (epoch_s - self.clock.start) / self.clock.speed

    def alarm_history(self) -> list[dict[str, Any]]:
        """Return every scaler run, by an alarm's transition or by the sweep, and its growth.

        Returns
        -------
        list of dict
            ``{"alarm", "via", "at_s", "grown", "error"}`` in time order: ``via`` is
            ``alarm`` (a transition into ``ALARM``) or ``sweep`` (one entry per alarm
            the sweep found in ``ALARM``, or one with the error of a failed sweep);
            ``at_s`` is wall seconds since the loop started and ``grown`` the scaler's
            growth list.
        """
        fired: list[dict[str, Any]] = []
        for alarm in self.alarms:
            for evaluation in alarm.history:
                if not evaluation.fired:
                    continue
                result = evaluation.action_result
                grown = result.get("grown", []) if isinstance(result, Mapping) else []
                fired.append(
                    {
                        "alarm": alarm.name,
                        "via": "alarm",
                        "at_s": round(self.emulated_to_wall_s(evaluation.timestamp), 1),
                        "grown": grown,
                        "error": evaluation.error,
                    }
                )
        for run in self.sweep.history if self.sweep is not None else []:
            at_s = round(self.emulated_to_wall_s(run.timestamp), 1)
            if run.error is not None:
                fired.append(
                    {"alarm": None, "via": "sweep", "at_s": at_s, "grown": [], "error": run.error}
                )
                continue
            for summary in run.result.get("alarms", []) if isinstance(run.result, Mapping) else []:
                fired.append(
                    {
                        "alarm": summary.get("alarm"),
                        "via": "sweep",
                        "at_s": at_s,
                        "grown": summary.get("grown", []),
                        "error": None,
                    }
                )
        return sorted(fired, key=lambda f: f["at_s"])


def shard_history(facade: Dynashard, keys: Sequence[str], loop: GrowthLoop) -> dict[str, Any]:
    """Read each key's shard history from the metadata table.

    Parameters
    ----------
    facade : Dynashard
        A facade over the act's tables.
    keys : sequence of str
        Logical keys.
    loop : GrowthLoop
        For converting the emulated ``since`` times to wall seconds.

    Returns
    -------
    dict
        Key -> list of ``{"count", "since_s"}`` (``since_s`` wall seconds after the act
        started; 0 for the count a key was created with), oldest first.
    """
    out: dict[str, Any] = {}
    for key in keys:
        info = facade.shard_info(key)
        history = list(info.history) or [(info.last_updated, info.number_of_shards)]
        out[key] = [
            {"count": count, "since_s": max(0.0, round(loop.emulated_to_wall_s(since), 1))}
            for since, count in history
        ]
    return out
