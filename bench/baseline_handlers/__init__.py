"""The two baseline handlers of the cold-start benchmark (:mod:`bench.cold_start`).

- :mod:`bench.baseline_handlers.logger_only`: Powertools' Logger and nothing else;
- :mod:`bench.baseline_handlers.dynamodb_minimal`: the least a DynamoDB handler needs,
  Powertools' Logger, boto3 and one DynamoDB client, one ``GetItem`` per invocation.

They are what a new Powertools user would write, measured in the same run as the
dynashard handlers so that every cold-start figure has a ratio against them.
"""
