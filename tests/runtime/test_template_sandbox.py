"""Run-time limits of spec templates and expressions: each hostile template
ends quickly with `TemplateLimitError`, and ordinary ones render as before."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from agentspec.core import sandbox
from agentspec.core.sandbox import TemplateLimitError
from agentspec.stdlib.functions import ValueTooLarge, fn


def render(source: str, **variables: object) -> str:
    return sandbox.render(sandbox.environment().from_string(source), variables)


HOSTILE = {
    "power tower": "{{ 10**(10**10) }}",
    "large power": "{{ 7**100000 }}",
    "float power": "{{ 10.0**1000 }}",
    "repeated string": "{{ 'a' * n }}",
    "repeated list": "{{ ([1] * n)|length }}",
    "huge range": "{% for i in range(10**9) %}{% endfor %}",
    "nested ranges": "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
    "doubling namespace": (
        "{% set ns = namespace(s='ab') %}"
        "{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    ),
    "doubling products": (
        "{% set ns = namespace(x=3) %}{% for i in range(64) %}{% set ns.x = ns.x * ns.x %}{% endfor %}"
    ),
    "center filter": "{{ 'a'|center(n) }}",
    "center method": "{{ 'a'.center(n) }}",
    "zfill method": "{{ 'a'.zfill(n) }}",
    "str.format width": "{{ '{:1000000000}'.format(1) }}",
    "nested format width": "{{ '{:{w}}'.format(1, w=n) }}",
    "percent width": "{{ '%01000000000d' % 1 }}",
    "format filter width": "{{ '%01000000000d'|format(1) }}",
    "format width from an argument": "{{ '{:{}}'.format(1, 2000000000) }}",
    "many % fields of a long value": "{{ (range(3000)|join('%(a)s')) % {'a': 'a'|center(999999)} }}",
    "many format fields of a long value": "{{ ('{0}' * 3000).format('a'|center(999999)) }}",
    "format_map of a long value": "{{ (range(3000)|join('{a}')).format_map({'a': 'a'|center(999999)}) }}",
    "format filter of a long value": "{{ (range(3000)|join('%s'))|format(*(['a'|center(999999)] * 3000)) }}",
    "replace growth": "{{ s|replace('a', s) }}",
    "indent filter": "{{ s|indent(n) }}",
    "recursive macro": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "captured output": (
        "{% set x %}{% for i in range(10000) %}{{ s }}{% endfor %}{% endset %}{{ x|length }}"
    ),
    "long output": "{% for i in range(10000) %}{{ s }}{% endfor %}",
    "nested loops over strings": "{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
    "join separator": "{{ range(10000)|join(s) }}",
}


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_templates_stop_at_a_limit(source: str) -> None:
    with pytest.raises(TemplateLimitError):
        render(source, n=10**10, s="a" * 200_000)


def test_the_sandbox_still_refuses_internals_and_mutation() -> None:
    with pytest.raises(SecurityError):
        render("{{ ''['__class__'] }}")
    with pytest.raises(SecurityError):
        render("{% set l = [1] %}{{ l.extend(l) }}")


def test_limits_leave_ordinary_templates_alone() -> None:
    text = render(
        "{{ 'ab' * 3 }} {{ 2**10 }} {% for i in range(3) %}{{ i }}{% endfor %}"
        " {{ '%5d' % 3 }}|{{ '{:>4}'.format(7) }}|{{ 'x'|center(5) }}|{{ q ~ '!' }}"
        "{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}"
        " {{ ns.n }}",
        q="hi",
    )
    assert text == "ababab 1024 012     3|   7|  x  |hi! 6"


def test_fast_paths_resolve_and_join_as_jinja_does() -> None:
    """A plain dict's key is read directly where no dict attribute has its name
    (`m.items()` is still the method, as in Jinja); `+` of two strings is bounded
    like any other `+`."""
    message = {"role": "user", "content": "hi", "items": "shadowed", "_x": 1}
    text = render(
        "{{ m.role }}|{{ m.content + '!' }}|{{ m.items() | list | length }}|{{ m._x }}"
        "|{{ m.missing is defined }}|{{ [1] + [2] }}|{{ 1 + 2 }}",
        m=message,
    )
    assert text == "user|hi!|4|1|False|[1, 2]|3"
    with pytest.raises(TemplateLimitError):
        render("{{ s + s }}", s="a" * 600_000)
    assert render("{{ s + '' }}", s="a" * 600_000) == "a" * 600_000  # one side empty: no join
    with pytest.raises(SecurityError):
        render("{{ m.__class__.__subclasses__() }}", m=message)


def test_a_field_named_like_a_dict_method_is_the_field() -> None:
    """Data with a field `items` (or `keys`, `values`...): `sample.items` read as a value
    is the field, as `sample.question` is; called, the method, as in Jinja."""
    sample = {"items": ["apple", "bread"], "keys": 3}
    text = render(
        "{{ s.items | join(', ') }}|{{ s.keys }}|{{ s.items() | list | length }}"
        "|{% for k in s.keys() %}{{ k }};{% endfor %}|{{ d.items is callable }}",
        s=sample,
        d={"q": 1},
    )
    assert text == "apple, bread|3|2|items;keys;|True"


def test_budget_is_per_render() -> None:
    template = sandbox.environment().from_string(
        "{% for i in range(10000) %}{% endfor %}{{ 'ok' }}"
    )
    for _ in range(20):  # 200,000 iterations in all, 10,000 per render
        assert sandbox.render(template, {}) == "ok"


def test_expression_repetition_is_bounded() -> None:
    assert (
        fn.repeat("ab", 3) == "ababab" and fn.repeat(2, 3) == 6 and fn.repeat(3, [1]) == [1, 1, 1]
    )
    with pytest.raises(ValueTooLarge):
        fn.repeat("a", 10**10)
    with pytest.raises(ValueTooLarge):
        fn.repeat(10**7, [0])


def test_wrapped_filters_behave_as_jinjas() -> None:
    text = render(
        "{{ 'a-b'|replace('-', '+') }}|{{ 'x'|center(3) }}|{{ 'a\nb'|indent(2) }}|"
        "{{ 'aaa bbb'|wordwrap(3) }}|{{ [1, 2, 3]|slice(2)|list }}|{{ [1, 2, 3]|batch(2)|list }}|"
        "{{ '%03d'|format(7) }}"
    )
    assert text == "a+b| x |a\n  b|aaa\nbbb|[[1, 2], [3]]|[[1, 2], [3]]|007"


def test_lipsum_is_not_offered() -> None:
    from jinja2.exceptions import UndefinedError

    with pytest.raises(UndefinedError):
        render("{{ lipsum(1000000) }}")


def test_counted_loops_keep_their_loop_variables() -> None:
    source = (
        "{% for m in ms %}{{ loop.index }}/{{ loop.length }}{{ '!' if loop.last }}{% endfor %}"
        "{% for x in [] %}{% else %} empty{% endfor %}"
        "{% for x in xs recursive %}{{ x.n }}{{ loop(x.c) }}{% endfor %}"
    )
    tree = {"n": 1, "c": [{"n": 2, "c": []}]}
    assert render(source, ms=["a", "b"], xs=[tree]) == "1/22/2! empty12"
