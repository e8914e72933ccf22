"""boto3 adapters of the library's ports (they import boto3; the ports do not).

- :mod:`dynashard.adapters.cloudwatch`: :class:`~dynashard.scaling.AlarmStateSource`
  over CloudWatch ``DescribeAlarms``;
- :mod:`dynashard.adapters.insights`: :class:`~dynashard.scaling.HotKeySource` and
  :class:`~dynashard.scaling.OfferedLoadSource` over CloudWatch Contributor Insights.

Each adapter takes an optional boto3 client and creates one only on first use.
"""
