"""CloudFormation's intrinsic functions, resolved against the local twin's resources.

A synthesized template names its resources by logical id and joins them into names,
ARNs and JSON bodies with ``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``,
``Fn::Select`` and ``Fn::Split``. :class:`Resolver` evaluates those over what the
sandbox created (each logical id's ``Ref`` value and attributes) and the pseudo
parameters of the local account, as CloudFormation does at deploy time.

Source: "Intrinsic function reference" and "Pseudo parameters reference" in the AWS
CloudFormation User Guide (what ``Ref`` and ``Fn::GetAtt`` return per resource type).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

#: The local account and region every local ARN is written in.
LOCAL_ACCOUNT_ID: Final = "000000000000"
LOCAL_PARTITION: Final = "aws"

_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class UnresolvedReferenceError(LookupError):
    """A template refers to a logical id or attribute the local twin does not have.

    Parameters
    ----------
    message : str
        What could not be resolved, naming the logical id and attribute.
    """


@dataclass
class LocalResource:
    """What ``Ref`` and ``Fn::GetAtt`` return for one resource of the twin.

    Parameters
    ----------
    ref : str
        The value of ``{"Ref": logical_id}`` (a table's or queue's name or URL, a
        function's name).
    attributes : dict of str to str
        ``Fn::GetAtt`` attributes, e.g. ``{"Arn": ..., "QueueName": ...}``.
    """

    ref: str
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass
class Resolver:
    """Evaluate intrinsic functions over the twin's local resources.

    Parameters
    ----------
    region : str
        ``AWS::Region``.
    resources : dict of str to LocalResource
        Logical id to its local values; filled in as the twin creates resources.
    account_id : str
        ``AWS::AccountId``.

    Examples
    --------
    >>> r = Resolver("us-east-1", {"T": LocalResource("t", {"Arn": "arn:t"})})
    >>> r.resolve({"Fn::Join": ["", [{"Fn::GetAtt": ["T", "Arn"]}, "/index/*"]]})
    'arn:t/index/*'
    """

    region: str
    resources: dict[str, LocalResource] = field(default_factory=dict)
    account_id: str = LOCAL_ACCOUNT_ID

    def pseudo(self) -> dict[str, str]:
        """Return the pseudo parameters (``AWS::Region``, ``AWS::AccountId``, ...).

        Returns
        -------
        dict of str to str
            Name to value.
        """
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account_id,
            "AWS::Partition": LOCAL_PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": "",
        }

    def ref(self, name: str) -> str:
        """Return ``{"Ref": name}``.

        Raises
        ------
        UnresolvedReferenceError
            For a logical id the twin has not created.
        """
        pseudo = self.pseudo()
        if name in pseudo:
            return pseudo[name]
        if name not in self.resources:
            raise UnresolvedReferenceError(f"Ref {name}: no such local resource")
        return self.resources[name].ref

    def get_att(self, name: str, attribute: str) -> str:
        """Return ``{"Fn::GetAtt": [name, attribute]}``.

        Raises
        ------
        UnresolvedReferenceError
            For a logical id or attribute the twin does not have.
        """
        resource = self.resources.get(name)
        if resource is None or attribute not in resource.attributes:
            raise UnresolvedReferenceError(f"Fn::GetAtt {name}.{attribute}: not modelled locally")
        return resource.attributes[attribute]

    def resolve(self, value: Any) -> Any:
        """Evaluate every intrinsic function in ``value``, recursively.

        Parameters
        ----------
        value : Any
            A template value: a scalar, a list, a mapping or an intrinsic function.

        Returns
        -------
        Any
            The value with every intrinsic replaced by its local result.

        Raises
        ------
        UnresolvedReferenceError
            When a reference cannot be resolved locally.
        """
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) == 1:
            (fn, arg), *_ = value.items()
            if fn == "Ref":
                return self.ref(str(arg))
            if fn == "Fn::GetAtt":
                name, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
                return self.get_att(str(name), str(attribute))
            if fn == "Fn::Join":
                separator, parts = arg
                return str(separator).join(str(p) for p in self.resolve(parts))
            if fn == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(self.resolve(index))]
            if fn == "Fn::Split":
                separator, text = arg
                return str(self.resolve(text)).split(str(separator))
            if fn == "Fn::Sub":
                return self._sub(arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        values = {k: str(self.resolve(v)) for k, v in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in values:
                return values[name]
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return _SUB_VARIABLE.sub(replace, str(text))
