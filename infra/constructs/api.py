"""The REST API shared by the ingest and query functions.

``POST /events``, ``POST /counters/{name}``, ``PUT /index/{key}/layout``,
``POST /index/{key}``, ``PUT /shards/{key}/strategy`` and ``PUT /shards/{key}/max-shards``
go to the ingest function (it may write); ``GET /events``,
``GET /counters/{name}``, ``GET /shards/{key}`` and ``GET /index/{key}`` go to the
query function. IAM (SigV4) authorization by default; an API key with a usage plan
as an option (context ``api_auth=api_key``). Requests are validated by API Gateway
before any function runs: JSON bodies against a model, required path and query
parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..config import DynashardParameters
from ..deploy_checks import LOGS_SERVICE_ENCRYPTED, NO_API_CACHE, skip_checkov


def _build_access_logs(scope: Construct, config: DynashardParameters) -> logs.LogGroup:
    """Return the API's access log group (retention from the config)."""
    return logs.LogGroup(
        scope,
        "AccessLogs",
        retention=logs.RetentionDays[config.log_retention_name],
        removal_policy=RemovalPolicy.DESTROY if config.is_dev else RemovalPolicy.RETAIN,
    )


def _build_rest_api(scope: Construct, config: DynashardParameters, name: str) -> apigw.RestApi:
    """Return the regional REST API named ``name``, its stage: access logs, tracing, throttling."""
    access_logs = _build_access_logs(scope, config)
    skip_checkov(access_logs, LOGS_SERVICE_ENCRYPTED)
    return apigw.RestApi(
        scope,
        "Api",
        rest_api_name=name,
        description="dynashard: sharded event ingest and scatter-gather reads",
        endpoint_types=[apigw.EndpointType.REGIONAL],
        # Execution logging needs the account-wide API Gateway CloudWatch role, a
        # per-region singleton this stack should not own; access logs are on instead.
        cloud_watch_role=False,
        deploy_options=apigw.StageOptions(
            stage_name=config.stage,
            access_log_destination=apigw.LogGroupLogDestination(access_logs),
            access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                caller=True,
                http_method=True,
                ip=True,
                protocol=True,
                request_time=True,
                resource_path=True,
                response_length=True,
                status=True,
                user=True,
            ),
            metrics_enabled=True,
            tracing_enabled=True,
            throttling_rate_limit=config.api_rate_limit,
            throttling_burst_limit=config.api_burst_limit,
        ),
    )


def _build_json_model(api: apigw.RestApi) -> apigw.Model:
    """Return the request model of POST bodies: a JSON object.

    Every body is an object (one event, ``{"events": [...]}``, ``{"by": n}``, a layout
    or ``{"items": [...]}``). Their fields are checked by the function (pydantic, a
    400 naming the field);
    the model keeps non-JSON, scalar and array bodies away from it.
    """
    return api.add_model(
        "JsonBody",
        content_type="application/json",
        description="A JSON object",
        schema=apigw.JsonSchema(
            schema=apigw.JsonSchemaVersion.DRAFT4,
            title="JsonBody",
            type=apigw.JsonSchemaType.OBJECT,
        ),
    )


class EventsApi(Construct):
    """The REST API, its request validators and (optionally) its usage plan.

    Parameters
    ----------
    scope : constructs.Construct
        Parent construct.
    construct_id : str
        Construct id.
    config : DynashardParameters
        Stage name, authorization mode, throttling and log retention.
    name : str
        Name of the API and of its usage plan (the stack's name, ``dynashard-<stage>``,
        in the project's stack).

    Attributes
    ----------
    api : aws_cdk.aws_apigateway.RestApi
        The API.
    api_key : aws_cdk.aws_apigateway.IApiKey or None
        The API key when ``api_auth == "api_key"``.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DynashardParameters, name: str
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._name = name
        self.api = _build_rest_api(self, config, name)
        skip_checkov(self.api.deployment_stage, NO_API_CACHE)
        # The stack exports the URL as ``ApiUrl``; drop RestApi's own hashed duplicate.
        self.api.node.try_remove_child("Endpoint")
        self._body_validator = self.api.add_request_validator(
            "BodyAndParameters", validate_request_body=True, validate_request_parameters=True
        )
        self._params_validator = self.api.add_request_validator(
            "Parameters", validate_request_body=False, validate_request_parameters=True
        )
        self._json_model = _build_json_model(self.api)
        self.api_key: apigw.IApiKey | None = None
        if config.api_auth == "api_key":
            self.api_key = self._build_usage_plan()

    def _build_usage_plan(self) -> apigw.IApiKey:
        """Create the usage plan (same throttling as the stage) and its API key."""
        plan = self.api.add_usage_plan(
            "UsagePlan",
            name=self._name,
            throttle=apigw.ThrottleSettings(
                rate_limit=self._config.api_rate_limit,
                burst_limit=self._config.api_burst_limit,
            ),
            api_stages=[apigw.UsagePlanPerApiStage(api=self.api, stage=self.api.deployment_stage)],
        )
        key = self.api.add_api_key("ApiKey")
        plan.add_api_key(key)
        return key

    def add_route(
        self,
        http_method: str,
        path: str,
        function: lambda_.IFunction,
        *,
        json_body: bool = False,
        required_query: Sequence[str] = (),
    ) -> apigw.Method:
        """Route a method and path to a function (Lambda proxy integration).

        Path parameters in ``path`` (``{name}``) are declared required.

        Parameters
        ----------
        http_method : str
            ``GET``, ``POST`` or ``PUT``.
        path : str
            Resource path, e.g. ``/counters/{name}``.
        function : aws_cdk.aws_lambda.IFunction
            The integration target.
        json_body : bool
            Whether the request body must match the JSON model.
        required_query : sequence of str
            Query string parameters the request must carry.

        Returns
        -------
        aws_cdk.aws_apigateway.Method
            The method, authorized with IAM or with the API key.
        """
        resource = self.api.root.resource_for_path(path)
        params = {
            f"method.request.path.{part[1:-1]}": True
            for part in path.split("/")
            if part.startswith("{") and part.endswith("}")
        }
        params.update({f"method.request.querystring.{q}": True for q in required_query})
        use_key = self._config.api_auth == "api_key"
        return resource.add_method(
            http_method,
            apigw.LambdaIntegration(function, allow_test_invoke=False),
            authorization_type=apigw.AuthorizationType.NONE
            if use_key
            else apigw.AuthorizationType.IAM,
            api_key_required=use_key,
            request_validator=self._body_validator if json_body else self._params_validator,
            request_models={"application/json": self._json_model} if json_body else None,
            request_parameters=params or None,
        )
