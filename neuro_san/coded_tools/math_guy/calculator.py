"""The example calculator: safe arithmetic, progress reports, and a sly_data result."""

from __future__ import annotations

import ast
import operator
from typing import Any

from neuro_san.interfaces.coded_tool import CodedTool

_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate(expression: str) -> float | int:
    """Evaluate + - * / ** and parentheses over numbers; anything else is refused."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            return _OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.operand))
        raise ValueError(f"not arithmetic: {ast.dump(node)[:40]}")

    return walk(ast.parse(expression.strip(), mode="eval"))


class Calculator(CodedTool):
    async def async_invoke(self, args: dict[str, Any], sly_data: dict[str, Any]) -> Any:
        reporter = args.get("progress_reporter")
        if reporter is not None:
            await reporter.async_report_progress({"progress": 0.0}, "evaluating")
        result = evaluate(str(args.get("expression", "")))
        sly_data["equals"] = result
        if reporter is not None:
            await reporter.async_report_progress({"progress": 1.0}, "done")
        return result
