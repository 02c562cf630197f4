// The jinja interpreter against what Python's jinja2 renders in HF's environment (each expected
// text below is jinja2's): whitespace control, loops and scoping, namespaces, filters, tojson,
// Python's str(), undefined values, errors with their lines, and the limits.
#include "switchyard/llm/jinja.hpp"

#include <gtest/gtest.h>

#include <string>

#include "switchyard/core/error.hpp"

namespace sy::llm::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& source, const Json& context = Json::object()) {
    return Template(source).render(context);
}

// The message of the sy::Error that parsing or rendering throws ("" when none is thrown).
std::string error_of(const std::string& source, const Json& context = Json::object()) {
    try {
        render(source, context);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Jinja, TrimBlocksAndLstripBlocks) {
    EXPECT_EQ(render("a\n  {% if true %}\n    x\n  {% endif %}\nb"), "a\n    x\nb");
    EXPECT_EQ(render("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}"), "  1\n  2\n");
    // Output tags are not stripped; a block after text on its line keeps the text's spaces.
    EXPECT_EQ(render("  {{ 1 }}\nx  {% if true %}y{% endif %}"), "  1\nx  y");
    EXPECT_EQ(render("{% if true %} \nx{% endif %}"), " \nx");  // only a newline right after
}

TEST(Jinja, WhitespaceModifiers) {
    EXPECT_EQ(render("a  \n {{- 1 -}} \n b"), "a1b");
    EXPECT_EQ(render("{%- for i in [1, 2] -%}\n  [{{ i }}]\n{%- endfor %}\nend"), "[1][2]end");
    EXPECT_EQ(render("  {%+ if true %}x{% endif +%}\ny"), "  x\ny");
    EXPECT_EQ(render("a\u3000{{- 1 -}}\u3000b"), "a1b");  // Unicode white space too
    EXPECT_EQ(render("line1\n  {% if true -%}\n    A\n  {%- endif %}\n  line3"), "line1\nA  line3");
}

TEST(Jinja, CommentsNewlinesAndTrailingNewline) {
    EXPECT_EQ(render("{# c #}\na {# c2 -#}   b\n  {#- c3 #}\nc"), "a bc");
    EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");  // newlines normalized, one trailing dropped
    EXPECT_EQ(render("x\n\n"), "x\n");
    EXPECT_EQ(render("{{ \"multi\nline\" }}"), "multi\nline");
}

TEST(Jinja, Loops) {
    EXPECT_EQ(render("{% for i in [3, 1, 2] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                     "{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
              "103TrueFalse3|212FalseFalse3|321FalseTrue3|");
    EXPECT_EQ(
        render(
            "{% for i in [1, 2, 3] if i > 1 %}{{ i }}/{{ loop.length }} {% else %}none{% endfor %}"
            "{% for i in [] %}x{% else %}empty{% endfor %}"),
        "2/2 3/2 empty");
    EXPECT_EQ(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
                     "{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
              "0134");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
              "a=1;b=2;");
    EXPECT_EQ(
        render(
            "{% for c in 'hé' %}[{{ c }}]{% endfor %}{% for k in {'x': 1} %}{{ k }}{% endfor %}"),
        "[h][é]x");
    EXPECT_EQ(
        render("{% for i in [1, 2] %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{% endfor %}"),
        "ab1");
}

TEST(Jinja, ScopesAndNamespaces) {
    // A set inside a loop stays in its iteration; a namespace carries values out.
    EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"),
              "0");
    EXPECT_EQ(render("{% for i in [0, 1, 2] %}{% if i == 0 %}{% set y = 'a' %}{% endif %}[{{ y "
                     "}}]{% endfor %}"),
              "[a][][]");
    EXPECT_EQ(render("{% set ns = namespace(v=0) %}{% for i in range(5) %}{% set ns.v = ns.v + i %}"
                     "{% endfor %}{{ ns.v }} {{ ns }}"),
              "10 <Namespace {'v': 10}>");
    EXPECT_EQ(render("{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");  // if has no scope
    EXPECT_NE(error_of("{% set d = {} %}{% set d.x = 1 %}").find("non-namespace"),
              std::string::npos);
}

TEST(Jinja, SetBlocksMacrosAndGeneration) {
    EXPECT_EQ(render("{% set b %}\n  in {{ 1 }}\n{% endset %}[{{ b }}]{% set u | upper %}abc{% "
                     "endset %}{{ u }}"),
              "[  in 1\n]ABC");
    EXPECT_EQ(render("{% macro m(a, b='d', c=none) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}"
                     "{{ m(1) }}{{ m(1, 2, 3) }}{{ m(a=5, c=6) }}{{ m() }}"),
              "[1|d|None][1|2|3][5|d|6][|d|None]");
    EXPECT_EQ(
        render(
            "{% set ns = namespace(a=1) %}{% macro bump() %}{% set ns.a = ns.a + 1 %}{% endmacro %}"
            "{{ bump() }}{{ bump() }}{{ ns.a }}"),
        "3");
    EXPECT_EQ(render("{% generation %}gen {{ 1 }}{% endgeneration %}"), "gen 1");
    EXPECT_NE(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").find("macro 'm'"),
              std::string::npos);
}

TEST(Jinja, Expressions) {
    EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 3 ** "
                     "2 }} {{ -2 ** 2 }}"),
              "3 -4 2 3.5 2.0 64 4");
    EXPECT_EQ(
        render(
            "{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 1 == 1.0 }}{{ [1] == [1.0] }}{{ 'ell' in 'hello' }}"
            "{{ 'z' not in {'a': 1} }}"),
        "TrueFalseTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ none or 'x' }}{{ 0 and 1 }}{{ 'y' if false else 'n' }}{{ 1 if false }}|{{ "
                     "'a' ~ 1 ~ none }}"),
              "x0n|a1None");
    EXPECT_EQ(render("{{ [1, 2, 3, 4][::-2] }}{{ 'héllo'[1:3] }}{{ 'abc'[-1] }}{{ (1,) }}{{ 'a' * "
                     "3 }}{{ [1] + [2] }}"),
              "[4, 2]élc(1,)aaa[1, 2]");
    EXPECT_EQ(
        render("{{ x.a }}{{ x['b'][1] }}{{ x.b.0 }}", Json{{"x", {{"a", "A"}, {"b", {1, 2}}}}}),
        "A21");
}

TEST(Jinja, PythonStr) {
    EXPECT_EQ(render("{{ true }} {{ none }} {{ 1.0 }} {{ 1e16 }} {{ 0.00001 }} {{ 0.1 + 0.2 }}"),
              "True None 1.0 1e+16 1e-05 0.30000000000000004");
    EXPECT_EQ(render("{{ [none, true, 1.5, 'a', \"it's\"] }}{{ {'a': (1,)} }}"),
              "[None, True, 1.5, 'a', \"it's\"]{'a': (1,)}");
    EXPECT_EQ(render("{{ ['tab\\t', '\\x01é\\u200b'] }}"), "['tab\\t', '\\x01é\\u200b']");
    EXPECT_EQ(render("{{ x.items() }}{{ x.keys() }}", Json{{"x", {{"a", 1}}}}),
              "dict_items([('a', 1)])dict_keys(['a'])");
}

TEST(Jinja, Filters) {
    EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ [1, 2]|length }}{{ 'hé'|count "
                     "}}|{{ 5|string }}"),
              "x|a|22|5");
    EXPECT_EQ(render("{{ '3.7'|int }}{{ ' 42 '|int }}{{ 'x'|int }}{{ 'x'|int(7) }}{{ '3'|float "
                     "}}{{ true|int }}"),
              "34207"
              "3.01");
    EXPECT_EQ(render("{{ 'Hi ß'|upper }}{{ 'Hi'|lower }}{{ 'aXbX'|replace('X', 'y', 1) }}{{ [1, "
                     "2]|join(', ') }}"),
              "HI SShiaybX1, 2");
    EXPECT_EQ(render("{{ [1, 2]|first }}{{ [1, 2]|last }}{{ []|first }}|{{ u|default('d') }}{{ "
                     "''|d('e', true) }}"),
              "12|de");
    EXPECT_EQ(render("{{ 'ab'|list }}{{ {'a': 1}|items|list }}{{ ms|map(attribute='r')|join }}"
                     "{{ ms|selectattr('r', 'equalto', 'u')|list }}{{ ms|rejectattr('r', 'eq', "
                     "'u')|list|length }}",
                     Json{{"ms", Json::array({{{"r", "u"}}, {{"r", "a"}}})}}),
              "['a', 'b'][('a', 1)]ua[{'r': 'u'}]1");
    EXPECT_EQ(render("{{ '<a>'|e }}{{ ('<a>'|safe) + '<b>' }}|{{ '<b>' ~ ('<a>'|e) }}"),
              "&lt;a&gt;<a>&lt;b&gt;|<b>&lt;a&gt;");
    EXPECT_EQ(render("{{ ('{\"k\": [1, 2.5]}'|from_json).k[1] }}"), "2.5");
}

TEST(Jinja, Methods) {
    EXPECT_EQ(
        render("{{ ' a  b '.split() }}{{ 'a,b,,c'.split(',', 1) }}{{ 'a b c'.rsplit(' ', 1) }}"
               "{{ ' a b '.split(None, 1) }}"),
        "['a', 'b']['a', 'b,,c']['a b', 'c']['a', 'b ']");
    EXPECT_EQ(render("{{ 'xxhixx'.strip('x') }}{{ '  l'.lstrip() }}{{ 'r  '.rstrip() }}{{ "
                     "\"they're\".title() }}"),
              "hilrThey'Re");
    EXPECT_EQ(
        render("{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc') }}{{ 'héé'.find('é') }}"
               "{{ 'ab'.replace('', '-') }}{{ '-'.join(['a', 'b']) }}"),
        "TrueTrue1-a-b-a-b");
    EXPECT_EQ(render("{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 5) }}{{ d.values()|list }}",
                     Json{{"d", {{"a", 1}}}}),
              "1None5[1]");
}

TEST(Jinja, Tests) {
    EXPECT_EQ(render("{{ 'x' is string }}{{ 1 is number }}{{ true is number }}{{ 1 is integer }}{{ "
                     "1.0 is float }}"
                     "{{ true is boolean }}{{ none is none }}{{ {} is mapping }}{{ [] is iterable "
                     "}}{{ '' is sequence }}"),
              "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 5 is odd }}{{ 5 is "
                     "divisibleby 5 }}"
                     "{{ 5 is eq 5 }}{{ 5 is equalto 4 }}{{ 5 is not none }}"),
              "TrueFalseTrueTrueTrueTrueFalseTrue");
}

TEST(Jinja, Tojson) {
    const Json x = Json::parse(R"({"b": [1, 2.5, null, true, {}], "a": "é\"\n\u0001", "c": []})");
    EXPECT_EQ(render("{{ x|tojson }}", {{"x", x}}),
              R"({"b": [1, 2.5, null, true, {}], "a": "é\"\n\u0001", "c": []})");
    EXPECT_EQ(render("{{ x|tojson(indent=2) }}", {{"x", Json{{"a", {1, Json::object()}}}}}),
              "{\n  \"a\": [\n    1,\n    {}\n  ]\n}");
    EXPECT_EQ(render("{{ x|tojson(sort_keys=true, separators=(',', ':')) }}",
                     {{"x", {{"b", 1}, {"a", 2}}}}),
              R"({"a":2,"b":1})");
    EXPECT_EQ(render("{{ 'é😀'|tojson(ensure_ascii=true) }}"), R"("\u00e9\ud83d\ude00")");
    // A generator is the list it yields (llama.cpp's R1 template writes
    // `tools|map(attribute='function')|tojson`); its other uses stay as in jinja2.
    EXPECT_EQ(render("{{ [1, 2]|map('string')|tojson }}"), R"(["1", "2"])");
    EXPECT_NE(error_of("{{ u|tojson }}").find("not JSON serializable"), std::string::npos);
}

TEST(Jinja, Undefined) {
    EXPECT_EQ(render("[{{ u }}]{{ u is defined }}{{ u is undefined }}{{ not u }}{{ u|length }}"
                     "{% for x in u %}x{% endfor %}{{ 'a' in u }}{{ m.content is defined }}",
                     {{"m", Json::object()}}),
              "[]FalseTrueTrue0False"
              "False");
    EXPECT_NE(error_of("{{ u.attr }}").find("'u' is undefined"), std::string::npos);
    EXPECT_NE(error_of("{{ 'a' + u }}").find("'u' is undefined"), std::string::npos);
    EXPECT_NE(error_of("{{ m.content + 'x' }}", {{"m", Json::object()}})
                  .find("'dict object' has no attribute 'content'"),
              std::string::npos);
    EXPECT_EQ(render("{{ m['x'] }}|{{ none.x }}|{{ [1][5] }}", {{"m", Json::object()}}), "||");
}

TEST(Jinja, TypeErrorsAsPython) {
    EXPECT_NE(error_of("{{ none + 'a' }}")
                  .find("unsupported operand type(s) for +: 'NoneType' and 'str'"),
              std::string::npos);
    EXPECT_NE(
        error_of("{{ 'a' + none }}").find("can only concatenate str (not \"NoneType\") to str"),
        std::string::npos);
    EXPECT_NE(error_of("{{ 'a' < 1 }}").find("'<' not supported"), std::string::npos);
    EXPECT_NE(error_of("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
    EXPECT_NE(error_of("{{ 'x' in none }}").find("not iterable"), std::string::npos);
    EXPECT_NE(error_of("{{ ','.join([1]) }}").find("expected str instance, int found"),
              std::string::npos);
}

TEST(Jinja, ErrorsNameTheLine) {
    EXPECT_EQ(error_of("a\nb\n  {% call x %}"), "jinja: line 3, column 6: unsupported tag 'call'");
    EXPECT_EQ(error_of("{% if x %}\nno end"),
              "jinja: line 2, column 7: unexpected end of template, expected 'elif' "
              "or 'else' or 'endif'");
    EXPECT_EQ(error_of("{{ 1 +\n }}"),
              "jinja: line 2, column 2: unexpected end of print statement");
    EXPECT_EQ(error_of("{% break %}"), "jinja: line 1, column 4: 'break' outside a loop");
    EXPECT_EQ(error_of("x\n\n{{ x|nosuch }}"), "jinja: line 3: no filter named 'nosuch'");
    EXPECT_EQ(error_of("{{ 'é' }}\n{{ m.role + 1 }}", {{"m", {{"role", "user"}}}}),
              "jinja: line 2: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(error_of("{{ 'abc }}"), "jinja: line 1, column 4: unterminated string");
}

TEST(Jinja, RaiseException) {
    EXPECT_EQ(error_of("ok\n{% if true %}{{ raise_exception('Conversation roles must alternate') "
                       "}}{% endif %}"),
              "jinja: line 2: Conversation roles must alternate");
    EXPECT_EQ(render("{{ strftime_now('%Y')|length }}"), "4");
}

TEST(Jinja, OrderedAndPlainJson) {
    const std::string src = "{{ x|tojson }}{% for k in x %}{{ k }}{% endfor %}";
    EXPECT_EQ(Template(src).render(Json{{"x", {{"b", 1}, {"a", 2}}}}), R"({"b": 1, "a": 2}ba)");
    EXPECT_EQ(Template(src).render(nlohmann::json{{"x", {{"b", 1}, {"a", 2}}}}),
              R"({"a": 2, "b": 1}ab)");
    EXPECT_NE(error_of("x", Json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(Jinja, Limits) {
    // Every way of running away ends in an error naming the limit, quickly.
    EXPECT_NE(error_of("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}").find("output"),
              std::string::npos);
    EXPECT_NE(
        error_of(
            "{% set s = 'a' * 1000 %}{% for i in range(1000) %}{% set x = s * 60000 %}{% endfor %}")
            .find("steps"),
        std::string::npos);
    EXPECT_NE(error_of("{% for i in range(100000) %}{% set l = range(100000) %}{% endfor %}")
                  .find("items"),
              std::string::npos);
    EXPECT_NE(error_of("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}").find("deep"),
              std::string::npos);
    EXPECT_NE(error_of("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}")
                  .find("deep"),
              std::string::npos);
    std::string chain = "{{ 1";
    for (int k = 0; k < 100000; ++k) chain += " + 1";
    EXPECT_NE(error_of(chain + " }}").find("deep"), std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = "
                       "[ns.l] %}{% endfor %}"
                       "{{ ns.l }}")
                  .find("deep"),
              std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("deep"),
              std::string::npos);
    EXPECT_NE(error_of("{{ range(200000)|length }}").find("MAX_RANGE"), std::string::npos);
    EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("limit"), std::string::npos);
    EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
}

}  // namespace
}  // namespace sy::llm::jinja
