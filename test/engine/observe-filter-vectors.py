"""Answers filter vectors with PyPI iii-sdk 0.25.0's evaluator; prints the JSON the TS test reads."""
import json, sys
from iii.filter import compile_filter, FilterError
docs = [
  {"input": {"amount": 700, "tags": ["a", "vip"], "user": {"name": "Zoë", "id": 7}, "items": [{"sku": "x", "n": 2}, {"sku": "y", "n": 5}], "a.b": 1}, "output": {"ok": True, "code": None}},
  {"input": {"amount": 20, "tags": [], "user": {"name": "al"}}, "output": {"ok": False}},
  {"input": None, "error": {"code": "boom", "message": "x"}},
  {"input": [10, "20", {"k": 1}], "output": 1.0, "caller": {"function_id": "f::g", "worker_name": "w"}, "metadata": {"m": [1, 2]}},
  {},
]
filters = [
  {}, {"input.amount": {"$gte": 500}}, {"input.amount": {"$lt": 500}}, {"input.amount": {"$gt": 20, "$lte": 700}},
  {"output.ok": {"$eq": True}}, {"output.code": {"$eq": None}}, {"output.code": {"$exists": True}}, {"output.missing": {"$exists": False}},
  {"input.tags": {"$any": {"$eq": "vip"}}}, {"input.items": {"$any": {"@.sku": {"$eq": "y"}, "@.n": {"$gt": 4}}}},
  {"input.items": {"$any": {}}}, {"input.tags": {"$any": {}}},
  {"input.user.name": {"$prefix": "Z"}}, {"input.user.name": {"$gt": "Zz"}}, {"input.user.name": {"$lt": "\U0001F600"}},
  {"input.amount": {"$in": [20, 700.0]}}, {"input.amount": {"$nin": [20]}}, {"input.nope": {"$ne": 3}}, {"input.nope": {"$nin": [3]}},
  {"$or": [{"input.amount": {"$eq": 20}}, {"error.code": {"$eq": "boom"}}]}, {"$not": {"input.amount": {"$gte": 500}}},
  {"$and": [{"input.amount": {"$gte": 1}}, {"output.ok": {"$eq": True}}]}, {"input.0": {"$eq": 10}}, {"input.1": {"$eq": 20}},
  {"input.a\\.b": {"$eq": 1}}, {"input.user": {"$eq": {"id": 7, "name": "Zoë"}}}, {"input.user": {"$eq": {"name": "Zoë"}}},
  {"metadata.m": {"$eq": [1, 2]}}, {"caller.function_id": {"$prefix": "f::"}}, {"output": {"$eq": 1}}, {"input": {"$eq": None}},
  {"input.tags.1": {"$eq": "vip"}}, {"input.tags.01": {"$exists": True}}, {"input.amount": {"$gte": "a"}},
  # refused
  {"input.amount": 5}, {"nope.x": {"$eq": 1}}, {"$eq": 1}, {"$foo": []}, {"input.a": {"$foo": 1}}, {"input.a": {}},
  {"$or": []}, {"$and": {}}, {"$not": 1}, {"input.a": {"$in": 3}}, {"input.a": {"$in": list(range(257))}},
  {"input.a": {"$gt": True}}, {"input.a": {"$exists": 1}}, {"input.a": {"$prefix": 1}}, {"input.a": {"$any": 1}},
  {"input.a": {"$any": {"input.b": {"$eq": 1}}}}, {"@.a": {"$eq": 1}}, {"input..a": {"$eq": 1}}, {"input.a\\x": {"$eq": 1}},
  {"input." + ".".join(["s"] * 17): {"$eq": 1}}, {"input.a": {"$eq": 2 ** 53 + 2}}, {"input.a": {"$and": []}},
  {"input.a": {"$eq": "x" * 9000}}, {"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"input.a": {"$eq": 1}}]}]}]}]}]}]}]}]},
  {"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"input.a": {"$eq": 1}}]}]}]}]}]}]}]},
  {"$and": [{"input.a": {"$eq": i}} for i in range(65)]}, 3, [],
]
out = []
for f in filters:
    try:
        c = compile_filter(f)
        out.append({"filter": f, "matches": [c.matches(d) for d in docs]})
    except FilterError as e:
        out.append({"filter": f, "error": e.code})
    except Exception as e:
        out.append({"filter": f, "error": type(e).__name__})
print(json.dumps({"generated_by": "iii-sdk 0.25.0 (PyPI) iii.filter.compile_filter", "docs": docs, "vectors": out}, ensure_ascii=False, indent=None))
