"""What AWS does around the functions, done locally: Lambda, API Gateway, event sources.

- :mod:`sandbox.local_aws.lambda_runtime`: execution environments for the handlers;
- :mod:`sandbox.local_aws.aws_events`: the events and context Lambda passes them;
- :mod:`sandbox.local_aws.gateway`: API Gateway's proxy integration over HTTP;
- :mod:`sandbox.local_aws.pollers`: SQS and Kinesis event-source mappings;
- :mod:`sandbox.local_aws.alarms`: CloudWatch alarms and the scheduled scaler;
- :mod:`sandbox.local_aws.logs`: CloudWatch Logs and a Contributor Insights rule.
"""
