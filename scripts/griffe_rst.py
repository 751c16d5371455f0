"""Griffe extension for the documentation site (mkdocs.yml): reStructuredText habits of the
docstrings, rendered as Markdown.

The docstrings are NumPy style and are also read by ``help()`` and doctest, so they keep three
reStructuredText forms that Markdown would render as prose: doctest lines outside an ``Examples``
section (Markdown makes ``>>>`` a nested quote), literal blocks after ``::`` and roles such as
``:func:`name```. Only the site's copy changes: ``>>>`` runs and ``::`` blocks become fenced code
(``pycon`` and plain text), a role becomes a code span. ``Examples`` sections are left to griffe's
NumPy parser, which renders them as ``pycon`` already.
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`~?\.?([^`]+)`")
_SECTION = re.compile(r"^\s*-{3,}\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _role(match: re.Match) -> str:
    target = match.group(1)
    if match.group(0).split("`")[1].startswith("~"):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown(text: str) -> str:
    """The docstring ``text`` with bare doctest runs and ``::`` literal blocks fenced, roles as code."""
    lines = text.split("\n")
    out: list[str] = []
    in_examples = in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or stripped.startswith("```"):
            out.append(line)
            i += 1
            continue
        if i + 1 < len(lines) and stripped and _SECTION.match(lines[i + 1]):
            in_examples = stripped.lower() == "examples"
            out.extend(lines[i:i + 2])
            i += 2
            continue
        if not in_examples and stripped.startswith(">>>"):
            pad = " " * _indent(line)
            if out and out[-1].strip():
                out.append("")
            out.append(f"{pad}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out += [f"{pad}```", ""]
            continue
        if stripped.endswith("::") and not in_examples and i + 2 < len(lines) and not lines[i + 1].strip():
            # a literal block: the lines after the blank line that are indented more than the
            # paragraph (or, on the summary line, whose indentation the docstring's cleaning removed)
            base = _indent(line) + (0 if i == 0 else 1)
            j = i + 2
            block: list[str] = []
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) >= base):
                if not lines[j].strip() and (i == 0 or j + 1 >= len(lines) or _indent(lines[j + 1]) < base):
                    break
                block.append(lines[j])
                j += 1
            if block:
                pad = " " * _indent(line)
                head = line.rstrip()[:-1]  # "text::" -> "text:"; a bare "::" line disappears
                out.append(_ROLE.sub(_role, head) if head.strip() != ":" else "")
                cut = min(_indent(b) for b in block if b.strip())
                language = "pycon" if block[0].strip().startswith(">>>") else "text"
                out += ["", f"{pad}```{language}", *(pad + b[cut:] for b in block), f"{pad}```", ""]
                i = j
                continue
        out.append(_ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrites each loaded object's docstring with :func:`markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
