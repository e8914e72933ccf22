"""Client wrappers that inject DynamoDB's failure modes into a moto-backed client."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


def client_error(code: str, message: str = "injected", operation: str = "Query") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


class FlakyClient:
    """Delegates to a real (moto) client; injects UnprocessedItems, UnprocessedKeys and
    failing shard queries."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.unprocessed_rounds = 0  # BatchWriteItem calls that leave half unprocessed
        self.unprocessed_keys_rounds = 0
        self.failing_pks: set[str] = set()
        self.fail_after_first_query: set[str] = set()
        self.batch_write_calls = 0
        self.queries: dict[str, int] = {}
        self.page_cap: int | None = None  # stands for Query's 1 MB page limit
        self.items_read = 0
        self.limits: list[int | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch_write_item(self, RequestItems: dict[str, Any], **kw: Any) -> dict[str, Any]:
        self.batch_write_calls += 1
        if self.unprocessed_rounds > 0:
            self.unprocessed_rounds -= 1
            ((table, requests),) = RequestItems.items()
            half = len(requests) // 2
            if half:
                self.inner.batch_write_item(RequestItems={table: requests[:half]})
            return {"UnprocessedItems": {table: requests[half:]}}
        return dict(self.inner.batch_write_item(RequestItems=RequestItems, **kw))

    def batch_get_item(self, RequestItems: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if self.unprocessed_keys_rounds > 0:
            self.unprocessed_keys_rounds -= 1
            ((table, spec),) = RequestItems.items()
            keys = spec["Keys"]
            first = self.inner.batch_get_item(RequestItems={table: {**spec, "Keys": keys[:1]}})
            return {
                "Responses": first["Responses"],
                "UnprocessedKeys": {table: {**spec, "Keys": keys[1:]}},
            }
        return dict(self.inner.batch_get_item(RequestItems=RequestItems, **kw))

    def query(self, **request: Any) -> dict[str, Any]:
        pk = request["ExpressionAttributeValues"][":pk"]["S"]
        self.queries[pk] = self.queries.get(pk, 0) + 1
        self.limits.append(request.get("Limit"))
        if pk in self.failing_pks or (pk in self.fail_after_first_query and self.queries[pk] > 1):
            raise client_error("InternalServerError", f"injected failure of {pk}")
        if self.page_cap is not None:
            request = {**request, "Limit": min(request.get("Limit", self.page_cap), self.page_cap)}
        response = dict(self.inner.query(**request))
        self.items_read += len(response.get("Items", []))
        return response
