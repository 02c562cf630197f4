// jinja2's filters and tests, Python's str and dict methods, and the globals HF's environment
// has (range, namespace, dict, raise_exception, strftime_now).
#include <unicode/ucasemap.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <optional>

#include "jinja_ast.hpp"

namespace sy::llm::jinja {
namespace {

using T = Value::Type;
using Opt = std::optional<Value>;

// Python's binding of arguments to parameters: positions first, then names.
std::vector<Opt> bind(const Args& a, std::initializer_list<const char*> names,
                      const std::string& what) {
    std::vector<Opt> out(names.size());
    if (a.pos.size() > names.size())
        fail(what + "() takes at most " + std::to_string(names.size()) + " argument(s)");
    for (size_t k = 0; k < a.pos.size(); ++k) out[k] = a.pos[k];
    for (auto& [name, v] : a.kw) {
        const auto it =
            std::find_if(names.begin(), names.end(), [&](const char* n) { return name == n; });
        if (it == names.end()) fail(what + "() got an unexpected keyword argument '" + name + "'");
        if (out[it - names.begin()])
            fail(what + "() got multiple values for argument '" + name + "'");
        out[it - names.begin()] = v;
    }
    return out;
}

bool given(const Opt& v) {
    return v && !v->is(T::none);
}

const std::string& need_str(const Value& v, const std::string& what) {
    if (v.is(T::undefined)) fail(v.str());
    if (!v.is(T::string)) fail(what + " must be str, not " + type_name(v));
    return v.str();
}

int64_t need_int(const Value& v, const std::string& what) {
    if (v.is(T::undefined)) fail(v.str());
    if (!v.is(T::integer) && !v.is(T::boolean))
        fail(what + " must be an integer, not " + type_name(v));
    return v.i;
}

Value make_list(Renderer& r, std::vector<Value> items, List::Kind kind = List::Kind::list,
                const char* generator = "") {
    List* l = r.heap.list(kind, std::move(items));
    l->generator = generator;
    return Value(l);
}

std::string encode(const std::vector<uint32_t>& cps, size_t from = 0, size_t to = SIZE_MAX) {
    std::string out;
    for (size_t k = from; k < std::min(to, cps.size()); ++k) append_utf8(out, cps[k]);
    return out;
}

// Full Unicode case mapping (ß -> SS), as Python's str.upper() and str.lower().
std::string change_case(const std::string& s, bool upper) {
    UErrorCode err = U_ZERO_ERROR;
    UCaseMap* map = ucasemap_open("", 0, &err);
    std::string out(s.size() * 3 + 16, '\0');
    const int32_t n = (upper ? ucasemap_utf8ToUpper : ucasemap_utf8ToLower)(
        map, out.data(), int32_t(out.size()), s.data(), int32_t(s.size()), &err);
    ucasemap_close(map);
    if (U_FAILURE(err)) fail("cannot change the case of a string");
    out.resize(n);
    return out;
}

std::string title(const std::string& s) {  // str.title(): words are runs of cased letters
    std::string out;
    bool previous_cased = false;
    for (uint32_t cp : code_points(s)) {
        append_utf8(out, uint32_t(previous_cased ? u_tolower(cp) : u_totitle(cp)));
        previous_cased = u_isupper(cp) || u_islower(cp) || u_istitle(cp);
    }
    return out;
}

// str.strip(chars), lstrip and rstrip: white space when chars is None.
std::string strip(const std::string& s, const Opt& chars, bool left, bool right) {
    const std::vector<uint32_t> cps = code_points(s);
    const std::vector<uint32_t> set =
        given(chars) ? code_points(need_str(*chars, "strip arg")) : std::vector<uint32_t>{};
    const auto strippable = [&](uint32_t cp) {
        return given(chars) ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
    };
    size_t from = 0, to = cps.size();
    while (left && from < to && strippable(cps[from])) ++from;
    while (right && to > from && strippable(cps[to - 1])) --to;
    return encode(cps, from, to);
}

// str.split and str.rsplit; rsplit is split over the reversed code points.
std::vector<std::string> split(const std::string& s, const Opt& sep, int64_t maxsplit, bool right) {
    std::vector<uint32_t> cps = code_points(s), by;
    if (given(sep) && (by = code_points(need_str(*sep, "separator"))).empty())
        fail("empty separator");
    if (right) {
        std::reverse(cps.begin(), cps.end());
        std::reverse(by.begin(), by.end());
    }
    std::vector<std::string> parts;
    const auto piece = [&](size_t from, size_t to) {
        std::vector<uint32_t> p(cps.begin() + from, cps.begin() + to);
        if (right) std::reverse(p.begin(), p.end());
        parts.push_back(encode(p));
    };
    size_t i = 0;
    const size_t n = cps.size();
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (by.empty()) {  // runs of white space, none kept at the ends
        for (; maxsplit > 0; --maxsplit) {
            while (i < n && is_space(cps[i])) ++i;
            if (i == n) break;
            const size_t start = i;
            while (i < n && !is_space(cps[i])) ++i;
            piece(start, i);
        }
        while (i < n && is_space(cps[i])) ++i;
        if (i < n) piece(i, n);
    } else {
        for (; maxsplit > 0; --maxsplit) {
            const size_t at =
                std::search(cps.begin() + i, cps.end(), by.begin(), by.end()) - cps.begin();
            if (at == n) break;
            piece(i, at);
            i = at + by.size();
        }
        piece(i, n);
    }
    if (right) std::reverse(parts.begin(), parts.end());
    return parts;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with,
                    int64_t count) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {  // Python inserts `with` around every character
        const std::vector<uint32_t> cps = code_points(s);
        for (size_t k = 0; k <= cps.size(); ++k) {
            if (int64_t(k) < count) out += with;
            if (k < cps.size()) append_utf8(out, cps[k]);
            if (out.size() > kMaxString) fail("a string over the size limit");
        }
        return out;
    }
    size_t start = 0;
    for (size_t at; count > 0 && (at = s.find(old, start)) != std::string::npos; --count) {
        out.append(s, start, at - start) += with;
        start = at + old.size();
        if (out.size() > kMaxString) fail("a string over the size limit");
    }
    return out + s.substr(start);
}

// The |int and |float filters: Python's int(str) (base 10) or else int(float(str)), and
// float(str); white space around and `_` between digits are allowed.
Value to_number(const Value& v, bool integer, const Opt& fallback) {
    if (v.is(T::integer) || v.is(T::boolean))
        return integer ? Value::integer(v.i) : Value(double(v.i));
    std::optional<double> d;
    if (v.is(T::floating)) d = v.f;
    if (v.is(T::string)) {
        std::string s = strip(v.str(), std::nullopt, true, true);
        for (size_t k = 1; k + 1 < s.size(); ++k)
            if (s[k] == '_' && std::isdigit(uint8_t(s[k - 1])) && std::isdigit(uint8_t(s[k + 1])))
                s.erase(k, 1);
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(s.c_str(), &end, 10);
        if (integer && !s.empty() && *end == '\0' && errno == 0) return Value::integer(i);
        const double f = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0' && s.find_first_of("_xXpP") == std::string::npos) d = f;
    }
    if (d && !integer) return Value(*d);
    if (d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(int64_t(*d));
    return fallback ? *fallback : integer ? Value::integer(0) : Value(0.0);
}

Value dict_items(Renderer& r, const Value& d, List::Kind kind, const char* generator = "") {
    std::vector<Value> out;
    for (auto& [k, v] : d.dict->items)
        out.push_back(kind == List::Kind::dict_values ? v
                      : kind == List::Kind::dict_keys
                          ? Value::string(k)
                          : make_list(r, {Value::string(k), v}, List::Kind::tuple));
    return make_list(r, std::move(out), kind, generator);
}

// jinja2's make_attrgetter: "a.b" and "0" (an index) look items up as getitem does.
Value attribute_of(Renderer& r, Value v, const Value& attribute) {
    if (!attribute.is(T::string)) return r.getitem(v, attribute);
    const std::string& path = attribute.str();
    for (size_t start = 0;;) {
        const size_t dot = std::min(path.find('.', start), path.size());
        const std::string part = path.substr(start, dot - start);
        const bool index = !part.empty() && part.size() < 18 &&
                           part.find_first_not_of("0123456789") == std::string::npos;
        v = r.getitem(v, index ? Value::integer(std::stoll(part)) : Value::string(part));
        if (dot == path.size()) return v;
        start = dot + 1;
    }
}

// select, reject, selectattr, rejectattr: generators of the items that pass a test.
Value select(Renderer& r, const Value& seq, const Args& args, bool by_attribute, bool keep) {
    if (by_attribute && args.pos.empty()) fail("missing parameter for attribute name");
    const size_t first = by_attribute ? 1 : 0;
    const std::string test = args.pos.size() > first ? need_str(args.pos[first], "test name") : "";
    Args test_args{{args.pos.begin() + std::min(first + 1, args.pos.size()), args.pos.end()},
                   args.kw};
    std::vector<Value> out;
    for (const Value& item : iterate(r.heap, seq)) {
        const Value v = by_attribute ? attribute_of(r, item, args.pos[0]) : item;
        if ((test.empty() ? truthy(v) : apply_test(r, test, v, test_args)) == keep)
            out.push_back(item);
    }
    return make_list(r, std::move(out), List::Kind::generator, "select_or_reject");
}

// HF's tojson: json.dumps(x, ensure_ascii=False, indent=indent, separators=..., sort_keys=...).
std::string json_of(const Value& v, const Args& args) {
    const auto a = bind(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
    JsonOptions o;
    o.ensure_ascii = a[0] && truthy(*a[0]);
    o.sort_keys = a[3] && truthy(*a[3]);
    if (given(a[1])) {
        o.indent = true;
        o.item_separator = ",";
        o.indent_text =
            a[1]->is(T::string)
                ? a[1]->str()
                : std::string(std::clamp<int64_t>(need_int(*a[1], "indent"), 0, 64), ' ');
    }
    if (given(a[2])) {
        const Value& s = *a[2];
        if (!s.is(T::list) || s.list->items.size() != 2)
            fail("tojson: separators must be a pair of strings");
        o.item_separator = need_str(s.list->items[0], "separator");
        o.key_separator = need_str(s.list->items[1], "separator");
    }
    return to_json(v, o);
}

}  // namespace

std::string escape_html(std::string_view s) {
    std::string out;
    for (char c : s) {
        const char* entity = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : nullptr;
        if (!entity) entity = c == '"' ? "&#34;" : c == '\'' ? "&#39;" : nullptr;
        if (entity)
            out += entity;
        else
            out += c;
    }
    return out;
}

Value apply_filter(Renderer& r, const std::string& name, const Value& v, const Args& args) {
    const auto params = [&](std::initializer_list<const char*> names) {
        return bind(args, names, name);
    };
    if (name == "length" || name == "count") return Value::integer(length(v));
    if (name == "string") return v.is(T::string) ? v : r.make_string(to_str(v));
    if (name == "safe") return r.make_string(to_str(v), true);
    if (name == "e" || name == "escape")
        return v.markup ? v : r.make_string(escape_html(to_str(v)), true);
    if (name == "tojson") return r.make_string(json_of(v, args));
    if (name == "list") return make_list(r, iterate(r.heap, v));
    if (name == "trim")
        return r.make_string(strip(to_str(v), params({"chars"})[0], true, true), v.markup);
    if (name == "lower" || name == "upper")
        return r.make_string(change_case(to_str(v), name == "upper"), v.markup);
    if (name == "default" || name == "d") {
        const auto a = params({"default_value", "boolean"});
        const bool use_default = (a[1] && truthy(*a[1])) ? !truthy(v) : v.is(T::undefined);
        return use_default ? (a[0] ? *a[0] : Value::string("")) : v;
    }
    if (name == "from_json") {
        const std::string& text = need_str(v, "the JSON object");
        try {
            return from_json(r.heap, nlohmann::ordered_json::parse(text));
        } catch (const nlohmann::json::exception& e) {
            fail(std::string("from_json: ") + e.what());
        }
    }
    if (name == "replace") {
        const auto a = params({"old", "new", "count"});
        if (!a[0] || !a[1]) fail("replace() needs old and new");
        return r.make_string(replace(to_str(v), to_str(*a[0]), to_str(*a[1]),
                                     given(a[2]) ? need_int(*a[2], "count") : -1));
    }
    if (name == "int" || name == "float")
        return to_number(v, name == "int", params({"default"})[0]);
    if (name == "first" || name == "last") {
        if (name == "last" && v.is(T::list) && v.list->kind == List::Kind::generator)
            fail("'generator' object is not reversible");
        const std::vector<Value> items = iterate(r.heap, v);
        if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
        return name == "first" ? items.front() : items.back();
    }
    if (name == "items") {
        if (v.is(T::undefined)) return make_list(r, {}, List::Kind::generator, "do_items");
        if (!v.is(T::dict) || v.dict->is_namespace) fail("Can only get item pairs from a mapping.");
        return dict_items(r, v, List::Kind::generator, "do_items");
    }
    if (name == "join") {
        const auto a = params({"d", "attribute"});
        std::string out;
        bool first = true;
        for (const Value& item : iterate(r.heap, v)) {
            if (!first) out += a[0] ? to_str(*a[0]) : "";
            first = false;
            out += to_str(given(a[1]) ? attribute_of(r, item, *a[1]) : item);
            if (out.size() > kMaxString) fail("a string over the size limit");
        }
        return r.make_string(std::move(out));
    }
    if (name == "map") {  // map(attribute='x', default=d) or map('filter', args...)
        std::vector<Value> out;
        const auto kw = [&](const char* key) {
            return std::find_if(args.kw.begin(), args.kw.end(),
                                [&](auto& a) { return a.first == key; });
        };
        if (const auto attribute = kw("attribute"); attribute != args.kw.end()) {
            for (const Value& item : iterate(r.heap, v)) {
                Value x = attribute_of(r, item, attribute->second);
                if (x.is(T::undefined) && kw("default") != args.kw.end()) x = kw("default")->second;
                out.push_back(std::move(x));
            }
        } else {
            if (args.pos.empty()) fail("map requires a filter argument");
            const std::string filter = need_str(args.pos[0], "filter name");
            const Args rest{{args.pos.begin() + 1, args.pos.end()}, args.kw};
            for (const Value& item : iterate(r.heap, v))
                out.push_back(apply_filter(r, filter, item, rest));
        }
        return make_list(r, std::move(out), List::Kind::generator, "sync_do_map");
    }
    if (name == "select" || name == "reject") return select(r, v, args, false, name == "select");
    if (name == "selectattr" || name == "rejectattr")
        return select(r, v, args, true, name == "selectattr");
    fail("no filter named '" + name + "'");
}

bool apply_test(Renderer& r, const std::string& name, const Value& v, const Args& args) {
    const auto arg = [&]() -> const Value& {
        if (args.pos.empty()) fail("test '" + name + "' needs an argument");
        return args.pos[0];
    };
    const bool mapping = v.is(T::dict) && !v.dict->is_namespace;
    if (name == "defined") return !v.is(T::undefined);
    if (name == "undefined") return v.is(T::undefined);
    if (name == "none") return v.is(T::none);
    if (name == "boolean") return v.is(T::boolean);
    if (name == "true" || name == "false")
        return v.is(T::boolean) && (v.i != 0) == (name == "true");
    if (name == "integer") return v.is(T::integer);
    if (name == "float") return v.is(T::floating);
    if (name == "number") return v.is_number();
    if (name == "string") return v.is(T::string);
    if (name == "mapping") return mapping;
    if (name == "iterable")
        return v.is(T::string) || v.is(T::list) || v.is(T::undefined) || mapping;
    if (name == "sequence")
        return v.is(T::string) || v.is(T::undefined) || mapping ||
               (v.is(T::list) && v.list->kind != List::Kind::generator);
    if (name == "callable") return v.is(T::function) || v.is(T::undefined);
    if (name == "odd" || name == "even") return (need_int(v, name) % 2 != 0) == (name == "odd");
    if (name == "divisibleby") {
        const int64_t d = need_int(arg(), name);
        if (d == 0) fail("integer division or modulo by zero");
        return need_int(v, name) % d == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg());
    if (name == "ne" || name == "!=") return !equals(v, arg());
    static const std::pair<const char*, const char*> orders[] = {
        {"lt", "<"}, {"lessthan", "<"},    {"<", "<"}, {"le", "<="}, {"<=", "<="},
        {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="}};
    for (auto [test, op] : orders) {
        if (name != test) continue;
        if (v.is(T::undefined) || arg().is(T::undefined))
            fail((v.is(T::undefined) ? v : arg()).str());
        const int c = compare(v, arg(), op);
        return op[0] == '<' ? (op[1] ? c <= 0 : c < 0) : (op[1] ? c >= 0 : c > 0);
    }
    if (name == "in") {
        const Value& container = arg();
        if (container.is(T::string))
            return v.is(T::string) && container.str().find(v.str()) != std::string::npos;
        if (container.is(T::dict)) return v.is(T::string) && container.dict->find(v.str());
        const std::vector<Value> items = iterate(r.heap, container);
        return std::any_of(items.begin(), items.end(),
                           [&](const Value& item) { return equals(item, v); });
    }
    fail("no test named '" + name + "'");
}

bool has_method(const Value& self, std::string_view name) {
    static const std::string_view str_methods[] = {
        "strip",    "lstrip", "rstrip", "split", "rsplit", "replace", "startswith",
        "endswith", "upper",  "lower",  "title", "find",   "join"};
    static const std::string_view dict_methods[] = {"items", "keys", "values", "get"};
    if (self.is(T::string))
        return std::find(std::begin(str_methods), std::end(str_methods), name) !=
               std::end(str_methods);
    if (self.is(T::dict) && !self.dict->is_namespace)
        return std::find(std::begin(dict_methods), std::end(dict_methods), name) !=
               std::end(dict_methods);
    return self.is(T::loop) && name == "cycle";
}

Value call_method(Renderer& r, const Value& self, const std::string& name, const Args& args) {
    if (self.is(T::loop)) {  // loop.cycle(a, b, ...)
        if (args.pos.empty()) fail("no items for cycling given");
        return args.pos[self.loop->index % args.pos.size()];
    }
    if (self.is(T::dict)) {
        if (name != "get") {
            bind(args, {}, name);
            return dict_items(r, self,
                              name == "items"  ? List::Kind::dict_items
                              : name == "keys" ? List::Kind::dict_keys
                                               : List::Kind::dict_values);
        }
        const auto a = bind(args, {"key", "default"}, name);
        if (!a[0]) fail("get expected at least 1 argument, got 0");
        if (a[0]->is(T::string))
            if (Value* v = self.dict->find(a[0]->str())) return *v;
        return a[1] ? *a[1] : Value::none();
    }
    const std::string& s = self.str();
    if (name == "upper" || name == "lower" || name == "title") {
        bind(args, {}, name);
        return r.make_string(name == "title" ? title(s) : change_case(s, name == "upper"),
                             self.markup);
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return r.make_string(
            strip(s, bind(args, {"chars"}, name)[0], name != "rstrip", name != "lstrip"),
            self.markup);
    if (name == "split" || name == "rsplit") {
        const auto a = bind(args, {"sep", "maxsplit"}, name);
        std::vector<Value> parts;
        for (std::string& p :
             split(s, a[0], a[1] ? need_int(*a[1], "maxsplit") : -1, name == "rsplit"))
            parts.push_back(r.make_string(std::move(p), self.markup));
        return make_list(r, std::move(parts));
    }
    if (name == "replace") {
        const auto a = bind(args, {"old", "new", "count"}, name);
        if (!a[0] || !a[1]) fail("replace expected at least 2 arguments");
        return r.make_string(
            replace(s, need_str(*a[0], "replace arg"), need_str(*a[1], "replace arg"),
                    a[2] ? need_int(*a[2], "count") : -1),
            self.markup);
    }
    if (name == "startswith" || name == "endswith") {  // a prefix or a tuple of them
        const auto a = bind(args, {"prefix"}, name);
        if (!a[0]) fail(name + "() takes at least 1 argument (0 given)");
        const bool tuple = a[0]->is(T::list) && a[0]->list->kind == List::Kind::tuple;
        for (const Value& o : tuple ? a[0]->list->items : std::vector<Value>{*a[0]}) {
            const std::string& p = need_str(o, name + " first arg");
            if (p.size() <= s.size() &&
                s.compare(name == "startswith" ? 0 : s.size() - p.size(), p.size(), p) == 0)
                return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    if (name == "find") {  // in code points, within s[start:end]
        const auto a = bind(args, {"sub", "start", "end"}, name);
        if (!a[0]) fail("find() takes at least 1 argument (0 given)");
        const std::vector<uint32_t> cps = code_points(s),
                                    sub = code_points(need_str(*a[0], "find arg"));
        const auto n = int64_t(cps.size());
        const auto bound = [&](const Opt& v, int64_t fallback) {
            const int64_t k = given(v) ? need_int(*v, "slice index") : fallback;
            return std::clamp<int64_t>(k < 0 ? k + n : k, 0, n);
        };
        const int64_t from = bound(a[1], 0), to = bound(a[2], n);
        if (to - from < int64_t(sub.size())) return Value::integer(-1);
        const auto at = std::search(cps.begin() + from, cps.begin() + to, sub.begin(), sub.end());
        return Value::integer(at == cps.begin() + to && !sub.empty() ? -1 : at - cps.begin());
    }
    // join
    const auto a = bind(args, {"iterable"}, name);
    if (!a[0]) fail("join() takes exactly one argument (0 given)");
    std::string out;
    size_t k = 0;
    for (const Value& item : iterate(r.heap, *a[0])) {
        if (!item.is(T::string))
            fail("sequence item " + std::to_string(k) + ": expected str instance, " +
                 type_name(item) + " found");
        if (k++) out += s;
        out += item.str();
        if (out.size() > kMaxString) fail("a string over the size limit");
    }
    return r.make_string(std::move(out), self.markup);
}

bool is_global(std::string_view name) {
    return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" ||
           name == "strftime_now";
}

Value call_global(Renderer& r, const std::string& name, const Args& args) {
    if (name == "raise_exception") {
        const auto a = bind(args, {"message"}, name);
        fail(a[0] ? to_str(*a[0]) : "raise_exception() called");
    }
    if (name == "strftime_now") {  // datetime.now().strftime(format)
        const auto a = bind(args, {"format"}, name);
        if (!a[0]) fail("strftime_now() needs a format");
        const std::string& f = need_str(*a[0], "format");
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        std::string out(256 + f.size() * 16, '\0');
        out.resize(std::strftime(out.data(), out.size(), f.c_str(), &local));
        return r.make_string(std::move(out));
    }
    if (name == "range") {
        if (!args.kw.empty() || args.pos.empty() || args.pos.size() > 3)
            fail("range expected 1 to 3 integer arguments");
        const bool one = args.pos.size() == 1;
        const int64_t start = one ? 0 : need_int(args.pos[0], name),
                      stop = need_int(args.pos[one ? 0 : 1], name);
        const int64_t step = args.pos.size() == 3 ? need_int(args.pos[2], name) : 1;
        if (step == 0) fail("range() arg 3 must not be zero");
        const long double count =
            std::max<long double>(0, std::ceil(((long double)stop - start) / step));
        if (count > kMaxRange)
            fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                 std::to_string(kMaxRange) + ").");
        std::vector<Value> items;
        for (int64_t k = 0; k < int64_t(count); ++k)
            items.push_back(Value::integer(start + k * step));
        return make_list(r, std::move(items));
    }
    // namespace(...) and dict(...): a mapping or pairs, then keywords.
    if (args.pos.size() > 1)
        fail(name + " expected at most 1 argument, got " + std::to_string(args.pos.size()));
    Dict* d = r.heap.make(Dict{name == "namespace", {}});
    if (!args.pos.empty() && args.pos[0].is(T::dict)) {
        for (auto& [k, v] : args.pos[0].dict->items) d->set(k, v);
    } else if (!args.pos.empty()) {
        for (const Value& pair : iterate(r.heap, args.pos[0])) {
            const std::vector<Value> kv = iterate(r.heap, pair);
            if (kv.size() != 2)
                fail("dictionary update sequence element has length " + std::to_string(kv.size()));
            d->set(need_str(kv[0], "key"), kv[1]);
        }
    }
    for (auto& [k, v] : args.kw) d->set(k, v);
    return Value(d);
}

}  // namespace sy::llm::jinja
