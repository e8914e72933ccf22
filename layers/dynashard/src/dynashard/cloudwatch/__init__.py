"""The CloudWatch adapters of the scaler's ports (they import boto3; the ports do not).

- :mod:`dynashard.cloudwatch.alarms`: :class:`~dynashard.planning.scaling.AlarmStateSource`
  over CloudWatch ``DescribeAlarms``;
- :mod:`dynashard.cloudwatch.insights`: :class:`~dynashard.planning.scaling.HotKeySource` and
  :class:`~dynashard.planning.scaling.OfferedLoadSource` over CloudWatch Contributor Insights.

Each adapter takes an optional boto3 client and creates one only on first use.
"""
