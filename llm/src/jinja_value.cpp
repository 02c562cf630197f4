// Python's semantics for the values of a render: str(), repr(), json.dumps, truthiness,
// comparison and len(), as jinja2 gets them from Python.
#include <unicode/uchar.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja_ast.hpp"

namespace sy::llm::jinja {

using T = Value::Type;

void fail(std::string message) {
    throw RenderError{std::move(message)};
}

Value Value::undefined(std::string why) {
    Value r;
    r.s = std::make_shared<const std::string>(std::move(why));
    return r;
}

Value Value::string(std::string v) {
    if (v.size() > kMaxString)
        fail("a string over the limit of " + std::to_string(kMaxString) + " bytes");
    Value r(Type::string, 0);
    r.s = std::make_shared<const std::string>(std::move(v));
    return r;
}

Value* Dict::find(std::string_view key) {
    for (auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

void Dict::set(std::string_view key, Value v) {
    if (Value* old = find(key))
        *old = std::move(v);
    else
        items.emplace_back(std::string(key), std::move(v));
}

void Heap::hold(uint64_t items) {
    if ((items_ += items) > kMaxItems)
        fail("the template keeps over " + std::to_string(kMaxItems) + " list and dict items");
}

void Heap::charge(uint64_t steps) {
    if ((steps_ += steps) > kMaxSteps)
        fail("the template is over the limit of " + std::to_string(kMaxSteps) + " steps");
}

List* Heap::list(List::Kind kind, std::vector<Value> items) {
    const uint64_t n = 1 + items.size();
    return make(List{kind, std::move(items), {}}, n);
}

// ---- UTF-8

std::pair<uint32_t, size_t> decode(std::string_view s, size_t i) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t len = b < 0x80           ? 1
                       : (b >> 5) == 0x6  ? 2
                       : (b >> 4) == 0xE  ? 3
                       : (b >> 3) == 0x1E ? 4
                                          : 0;
    if (len == 0 || i + len > s.size()) return {b, 1};
    uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
        const auto c = static_cast<uint8_t>(s[i + k]);
        if ((c >> 6) != 0x2) return {b, 1};
        cp = (cp << 6) | (c & 0x3F);
    }
    return {cp, len};
}

void append_escape(std::string& out, uint32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf,
                  cp <= 0xFF     ? "\\x%02x"
                  : cp <= 0xFFFF ? "\\u%04x"
                                 : "\\U%08x",
                  cp);
    out += buf;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
        return;
    }
    const int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    out += char((0xF00 >> n) | (cp >> (6 * (n - 1))));  // 110xxxxx, 1110xxxx or 11110xxx
    for (int k = n - 2; k >= 0; --k) out += char(0x80 | ((cp >> (6 * k)) & 0x3F));
}

std::vector<uint32_t> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size(); i += decode(s, i).second) out.push_back(decode(s, i).first);
    return out;
}

bool is_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string rstrip_space(std::string_view s) {
    size_t end = 0;
    for (size_t i = 0; i < s.size();) {
        const auto [cp, len] = decode(s, i);
        i += len;
        if (!is_space(cp)) end = i;
    }
    return std::string(s.substr(0, end));
}

// ---- str() and repr()

std::string type_name(const Value& v) {
    static const char* const names[] = {"Undefined", "NoneType", "bool", "int", "float", "str"};
    static const char* const lists[] = {"list",      "tuple",       "generator",
                                        "dict_keys", "dict_values", "dict_items"};
    if (v.type <= T::string) return v.markup ? "Markup" : names[int(v.type)];
    if (v.is(T::list)) return lists[int(v.list->kind)];
    if (v.is(T::dict)) return v.dict->is_namespace ? "Namespace" : "dict";
    if (v.is(T::function)) return v.fn->macro ? "Macro" : "builtin_function_or_method";
    return "LoopContext";
}

namespace {

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[64];
    const auto end = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific).ptr;
    std::string_view sci(buf, end - buf);  // "-1.25e+16": the shortest digits that round-trip
    std::string out = sci[0] == '-' ? "-" : "";
    sci.remove_prefix(out.size());
    const size_t e = sci.find('e');
    std::string digits(sci.substr(0, e));
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
    const int point = exponent + 1, n = int(digits.size());  // the value is 0.DIGITS x 10^point
    if (point <= -4 || point > 16) {  // where Python's repr switches to an exponent
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + digits.substr(0, 1) + (n > 1 ? "." + digits.substr(1) : "") + exp;
    }
    if (point <= 0) return out + "0." + std::string(-point, '0') + digits;
    if (point >= n) return out + digits + std::string(point - n, '0') + ".0";
    return out + digits.substr(0, point) + "." + digits.substr(point);
}

[[noreturn]] void too_deep() {
    fail("a value nested over " + std::to_string(kMaxDepth) + " deep");
}

bool is_printable(uint32_t cp) {  // Python's str.isprintable() for one character
    if (cp < 0x7F) return cp >= 0x20;
    const auto c = u_charType(UChar32(cp));
    return c != U_CONTROL_CHAR && c != U_FORMAT_CHAR && c != U_SURROGATE &&
           c != U_PRIVATE_USE_CHAR && c != U_UNASSIGNED && c != U_LINE_SEPARATOR &&
           c != U_PARAGRAPH_SEPARATOR && c != U_SPACE_SEPARATOR;
}

std::string string_repr(std::string_view s) {
    const char quote = s.find('\'') != s.npos && s.find('"') == s.npos ? '"' : '\'';
    std::string out(1, quote);
    for (size_t i = 0; i < s.size();) {
        const auto [cp, len] = decode(s, i);
        i += len;
        if (cp == uint32_t(quote) || cp == '\\') {
            out += '\\';
            out += char(cp);
        } else if (cp == '\t' || cp == '\n' || cp == '\r') {
            out += cp == '\t' ? "\\t" : cp == '\n' ? "\\n" : "\\r";
        } else if (is_printable(cp)) {
            append_utf8(out, cp);
        } else {
            append_escape(out, cp);
        }
    }
    return out + quote;
}

std::string repr_at(const Value& v, int depth) {
    if (depth > kMaxDepth) too_deep();
    std::string out;
    const auto items = [&](const char* open, const char* close) {
        out = open;
        const bool dict = v.is(T::dict);
        const size_t n = dict ? v.dict->items.size() : v.list->items.size();
        for (size_t k = 0; k < n; ++k) {
            if (k) out += ", ";
            if (dict) out += string_repr(v.dict->items[k].first) + ": ";
            out += repr_at(dict ? v.dict->items[k].second : v.list->items[k], depth + 1);
            if (out.size() > kMaxString) fail("a string over the size limit");
        }
        return out + (v.is(T::list) && v.list->kind == List::Kind::tuple && n == 1 ? "," : "") +
               close;
    };
    switch (v.type) {
        case T::undefined: return "Undefined";
        case T::none: return "None";
        case T::boolean: return v.i ? "True" : "False";
        case T::integer: return std::to_string(v.i);
        case T::floating: return float_repr(v.f);
        case T::string:
            return v.markup ? "Markup(" + string_repr(v.str()) + ")" : string_repr(v.str());
        case T::function:
            return v.fn->macro ? "<Macro '" + v.fn->name + "'>"
                               : "<built-in method " + v.fn->name + ">";
        case T::loop: return "<LoopContext " + std::to_string(v.loop->index + 1) + ">";
        case T::dict: return v.dict->is_namespace ? items("<Namespace {", "}>") : items("{", "}");
        case T::list: break;
    }
    switch (v.list->kind) {
        case List::Kind::list: return items("[", "]");
        case List::Kind::tuple: return items("(", ")");
        case List::Kind::generator: return "<generator object " + v.list->generator + ">";
        default: return items((type_name(v) + "([").c_str(), "])");
    }
}

}  // namespace

std::string to_str(const Value& v) {
    return v.is(T::string) ? v.str() : v.is(T::undefined) ? "" : repr_at(v, 0);
}

std::string repr(const Value& v) {
    return repr_at(v, 0);
}

// ---- Truth, equality, order, length

bool truthy(const Value& v) {
    switch (v.type) {
        case T::undefined:
        case T::none: return false;
        case T::boolean:
        case T::integer: return v.i != 0;
        case T::floating: return v.f != 0;
        case T::string: return !v.str().empty();
        case T::dict: return v.dict->is_namespace || !v.dict->items.empty();
        case T::list: return v.list->kind == List::Kind::generator || !v.list->items.empty();
        default: return true;
    }
}

namespace {

double number(const Value& v) {
    return v.is(T::floating) ? v.f : double(v.i);
}

// Lists compare with lists and tuples with tuples; other sequences only by identity.
bool comparable_sequences(const Value& a, const Value& b) {
    const auto kind = a.list->kind;
    return kind == b.list->kind && (kind == List::Kind::list || kind == List::Kind::tuple);
}

bool equals_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxDepth) too_deep();
    if (a.is_number() && b.is_number())
        return a.is(T::floating) || b.is(T::floating) ? number(a) == number(b) : a.i == b.i;
    if (a.type != b.type) return false;
    switch (a.type) {
        case T::undefined:
        case T::none: return true;
        case T::string: return a.str() == b.str();
        case T::dict: {
            if (a.dict->is_namespace || b.dict->is_namespace) return a.dict == b.dict;
            if (a.dict->items.size() != b.dict->items.size()) return false;
            for (auto& [k, v] : a.dict->items) {
                const Value* other = b.dict->find(k);
                if (!other || !equals_at(v, *other, depth + 1)) return false;
            }
            return true;
        }
        case T::list: {
            if (a.list == b.list) return true;
            if (!comparable_sequences(a, b) || a.list->items.size() != b.list->items.size())
                return false;
            for (size_t k = 0; k < a.list->items.size(); ++k)
                if (!equals_at(a.list->items[k], b.list->items[k], depth + 1)) return false;
            return true;
        }
        default: return a.is(T::function) ? a.fn == b.fn : a.loop == b.loop;
    }
}

int compare_at(const Value& a, const Value& b, const char* op, int depth) {
    if (depth > kMaxDepth) too_deep();
    if (a.is_number() && b.is_number()) {
        if (!a.is(T::floating) && !b.is(T::floating)) return a.i < b.i ? -1 : a.i > b.i;
        return number(a) < number(b) ? -1 : number(a) > number(b);  // NaN compares as neither
    }
    if (a.is(T::string) && b.is(T::string))
        return a.str().compare(b.str());  // UTF-8 orders as code points
    if (a.is(T::list) && b.is(T::list) && comparable_sequences(a, b)) {
        const auto &x = a.list->items, &y = b.list->items;
        for (size_t k = 0; k < x.size() && k < y.size(); ++k)
            if (!equals_at(x[k], y[k], depth + 1)) return compare_at(x[k], y[k], op, depth + 1);
        return x.size() < y.size() ? -1 : x.size() > y.size();
    }
    fail(std::string("'") + op + "' not supported between instances of '" + type_name(a) +
         "' and '" + type_name(b) + "'");
}

}  // namespace

bool equals(const Value& a, const Value& b) {
    return equals_at(a, b, 0);
}

int compare(const Value& a, const Value& b, const char* op) {
    return compare_at(a, b, op, 0);
}

int64_t length(const Value& v) {
    if (v.is(T::undefined)) return 0;
    if (v.is(T::string)) return int64_t(code_points(v.str()).size());
    if (v.is(T::dict) && !v.dict->is_namespace) return int64_t(v.dict->items.size());
    if (v.is(T::list) && v.list->kind != List::Kind::generator)
        return int64_t(v.list->items.size());
    fail("object of type '" + type_name(v) + "' has no len()");
}

std::vector<Value> iterate(Heap& heap, const Value& v) {
    std::vector<Value> out;
    if (v.is(T::undefined)) return out;
    if (v.is(T::list)) {
        heap.charge(v.list->items.size());
        return v.list->items;
    }
    if (v.is(T::string)) {
        heap.charge(v.str().size());
        for (size_t i = 0; i < v.str().size(); i += out.back().str().size()) {
            out.push_back(Value::string(v.str().substr(i, decode(v.str(), i).second)));
            out.back().markup = v.markup;
        }
        return out;
    }
    if (!v.is(T::dict) || v.dict->is_namespace)
        fail("'" + type_name(v) + "' object is not iterable");
    heap.charge(v.dict->items.size());
    for (auto& item : v.dict->items) out.push_back(Value::string(item.first));
    return out;
}

// ---- JSON

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const auto [cp, len] = decode(s, i);
        const char* escape = cp == '"'    ? "\\\""
                             : cp == '\\' ? "\\\\"
                             : cp == '\n' ? "\\n"
                             : cp == '\r' ? "\\r"
                             : cp == '\t' ? "\\t"
                             : cp == '\b' ? "\\b"
                             : cp == '\f' ? "\\f"
                                          : nullptr;
        char buf[16];
        if (escape) {
            out += escape;
        } else if (cp >= 0x20 && (cp < 0x7F || !ensure_ascii)) {
            out.append(s.substr(i, len));
        } else if (cp < 0x10000) {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            out += buf;
        } else {  // a surrogate pair
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                          0xDC00 + (cp & 0x3FF));
            out += buf;
        }
        i += len;
    }
    out += '"';
}

void json_value(std::string& out, const Value& v, const JsonOptions& o, int depth) {
    if (depth > kMaxDepth) too_deep();
    if (out.size() > kMaxString) fail("a JSON text over the size limit");
    const auto newline = [&](int level) {
        if (!o.indent) return;
        out += '\n';
        for (int k = 0; k < level; ++k) out += o.indent_text;
    };
    const bool is_dict = v.is(T::dict) && !v.dict->is_namespace;
    // A generator too, as the list it yields: llama.cpp's own templates (written for its
    // engine, whose filters give lists) write `tools | map(attribute='function') | tojson`.
    const bool is_list = v.is(T::list);
    if (v.is(T::none)) {
        out += "null";
    } else if (v.is(T::boolean)) {
        out += v.i ? "true" : "false";
    } else if (v.is(T::integer)) {
        out += std::to_string(v.i);
    } else if (v.is(T::floating)) {
        out += std::isnan(v.f)   ? "NaN"
               : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity")
                                 : float_repr(v.f);
    } else if (v.is(T::string)) {
        json_string(out, v.str(), o.ensure_ascii);
    } else if (is_dict) {
        std::vector<const std::pair<std::string, Value>*> items;
        for (auto& item : v.dict->items) items.push_back(&item);
        if (o.sort_keys)
            std::stable_sort(items.begin(), items.end(),
                             [](auto* a, auto* b) { return a->first < b->first; });
        out += '{';
        for (size_t k = 0; k < items.size(); ++k) {
            out += k ? o.item_separator : "";
            newline(depth + 1);
            json_string(out, items[k]->first, o.ensure_ascii);
            out += o.key_separator;
            json_value(out, items[k]->second, o, depth + 1);
        }
        if (!items.empty()) newline(depth);
        out += '}';
    } else if (is_list) {
        out += '[';
        for (size_t k = 0; k < v.list->items.size(); ++k) {
            out += k ? o.item_separator : "";
            newline(depth + 1);
            json_value(out, v.list->items[k], o, depth + 1);
        }
        if (!v.list->items.empty()) newline(depth);
        out += ']';
    } else {
        fail("Object of type " + type_name(v) + " is not JSON serializable");
    }
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
    std::string out;
    json_value(out, v, options, 0);
    return out;
}

template <class Json>
Value from_json(Heap& heap, const Json& json, int depth) {
    if (depth > kMaxDepth) too_deep();
    using J = nlohmann::json::value_t;
    switch (json.type()) {
        case J::null: return Value::none();
        case J::boolean: return Value::boolean(json.template get<bool>());
        case J::number_integer: return Value::integer(json.template get<int64_t>());
        case J::number_unsigned: {  // past int64: a float, where Python would keep every digit
            const auto u = json.template get<uint64_t>();
            return u <= uint64_t(INT64_MAX) ? Value::integer(int64_t(u)) : Value(double(u));
        }
        case J::number_float: return Value(json.template get<double>());
        case J::string: return Value::string(json.template get<std::string>());
        case J::array: {
            List* list = heap.list();
            for (const auto& item : json) list->items.push_back(from_json(heap, item, depth + 1));
            heap.hold(list->items.size());
            return Value(list);
        }
        case J::object: {
            Dict* dict = heap.make(Dict{});
            for (auto it = json.begin(); it != json.end(); ++it)
                dict->items.emplace_back(it.key(), from_json(heap, it.value(), depth + 1));
            heap.hold(dict->items.size());
            return Value(dict);
        }
        default: fail("unsupported JSON value (binary)");
    }
}

template Value from_json(Heap&, const nlohmann::json&, int);
template Value from_json(Heap&, const nlohmann::ordered_json&, int);

}  // namespace sy::llm::jinja
