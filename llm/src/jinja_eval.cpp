// The jinja evaluator: statements and expressions over Python values, with jinja2's scoping
// (a loop iteration and a macro call have their own variables; `if` does not).
#include <algorithm>
#include <cmath>

#include "jinja_ast.hpp"
#include "switchyard/core/error.hpp"

namespace sy::llm::jinja {
namespace {

using T = Value::Type;

// jinja2's object_type_repr, for the messages of undefined values.
std::string object_name(const Value& v) {
    return v.is(T::none) ? "None" : type_name(v) + " object";
}

Value no_attribute(const Value& obj, const std::string& name) {
    return Value::undefined("'" + object_name(obj) + "' has no attribute '" + name + "'");
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
    fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) +
         "'");
}

bool is_sequence(const Value& v) {  // a list or tuple: indexing, slicing, + and *
    return v.is(T::list) && (v.list->kind == List::Kind::list || v.list->kind == List::Kind::tuple);
}

// Python's arithmetic on ints (here 64-bit: overflow is an error) and floats.
Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    const bool ints = !a.is(T::floating) && !b.is(T::floating);
    const int64_t x = a.i, y = b.i;
    const double p = ints ? double(x) : a.is(T::floating) ? a.f : double(x);
    const double q = ints ? double(y) : b.is(T::floating) ? b.f : double(y);
    int64_t r = 0;
    bool overflow = false;
    if (op == "+" || op == "-" || op == "*") {
        if (!ints) return Value(op == "+" ? p + q : op == "-" ? p - q : p * q);
        overflow = op == "+"   ? __builtin_add_overflow(x, y, &r)
                   : op == "-" ? __builtin_sub_overflow(x, y, &r)
                               : __builtin_mul_overflow(x, y, &r);
    } else if (op == "/") {
        if (q == 0) fail("division by zero");
        return Value(p / q);
    } else if (op == "//" || op == "%") {
        if (q == 0) fail("integer division or modulo by zero");
        if (ints) {
            if (x == INT64_MIN && y == -1) fail("integer overflow");
            int64_t quotient = x / y, rest = x % y;
            if (rest != 0 && (rest < 0) != (y < 0)) --quotient, rest += y;
            return Value::integer(op == "//" ? quotient : rest);
        }
        double rest = std::fmod(p, q), quotient = (p - rest) / q;  // Python's float_divmod
        if (rest != 0 && (rest < 0) != (q < 0)) rest += q, quotient -= 1;
        if (rest == 0) rest = std::copysign(0.0, q);
        if (quotient == 0)
            quotient = std::copysign(0.0, p / q);
        else
            quotient = quotient - std::floor(quotient) > 0.5 ? std::floor(quotient) + 1
                                                             : std::floor(quotient);
        return Value(op == "//" ? quotient : rest);
    } else if (op == "**") {
        if (!ints || y < 0) {
            if (p == 0 && q < 0) fail("0.0 cannot be raised to a negative power");
            return Value(std::pow(p, q));
        }
        r = 1;
        for (int64_t e = y, base = x; e > 0 && !overflow; e >>= 1) {
            overflow = (e & 1) && __builtin_mul_overflow(r, base, &r);
            overflow = overflow || (e > 1 && __builtin_mul_overflow(base, base, &base));
        }
    }
    if (overflow) fail("integer overflow");
    return Value::integer(r);
}

}  // namespace

Renderer::Nest::Nest(Renderer& renderer) : r(renderer) {
    if (++r.depth_ > kMaxDepth)
        fail("nested over " + std::to_string(kMaxDepth) + " deep (macro recursion?)");
}

Value Renderer::make_string(std::string s, bool markup) {
    heap.charge(s.size() / 16);
    Value v = Value::string(std::move(s));
    v.markup = markup;
    return v;
}

template <class Json>
std::string Renderer::render(const Json& context) {
    try {
        if (!context.is_object()) fail("the context must be a JSON object");
        frames_.assign(1, Frame{});
        for (auto& [name, v] : from_json(heap, context).dict->items)
            frames_[0].vars.emplace_back(name, v);
        exec(tpl_.body);
    } catch (const RenderError& e) {
        throw Error("jinja: line " + std::to_string(line_) + ": " + e.message);
    }
    return std::move(output_);
}

template std::string Renderer::render(const nlohmann::json&);
template std::string Renderer::render(const nlohmann::ordered_json&);

// ---- Variables

Value Renderer::lookup(const std::string& name) {
    for (size_t f = frame_;; f = frames_[f].parent) {
        for (auto& [k, v] : frames_[f].vars)
            if (k == name) return v;
        if (f == 0) break;
    }
    if (is_global(name)) return Value(heap.make(Function{name, nullptr, {}, false}));
    return Value::undefined("'" + name + "' is undefined");
}

void Renderer::set_var(const std::string& name, Value v) {
    for (auto& [k, old] : frames_[frame_].vars)
        if (k == name) return void(old = std::move(v));
    frames_[frame_].vars.emplace_back(name, std::move(v));
}

void Renderer::push_frame(size_t parent) {
    frames_.push_back(Frame{{}, parent});
    frame_ = frames_.size() - 1;
}

void Renderer::pop_frame(size_t previous) {
    frames_.pop_back();
    frame_ = previous;
}

void Renderer::assign(const Stmt& s, const Value& v) {
    if (s.attribute_target) {  // {% set ns.attr = v %}
        const Value ns = lookup(s.targets[0]);
        if (!ns.is(T::dict) || !ns.dict->is_namespace)
            fail("cannot assign attribute on non-namespace object");
        return ns.dict->set(s.targets[1], v);
    }
    if (s.targets.size() == 1) return set_var(s.targets[0], v);
    if (v.is(T::undefined)) fail(v.str());
    const std::vector<Value> items = iterate(heap, v);
    if (items.size() != s.targets.size())
        fail(std::string(items.size() < s.targets.size() ? "not enough" : "too many") +
             " values to unpack (expected " + std::to_string(s.targets.size()) + ", got " +
             std::to_string(items.size()) + ")");
    for (size_t k = 0; k < items.size(); ++k) set_var(s.targets[k], items[k]);
}

// ---- Statements

void Renderer::emit(std::string_view text) {
    if (out_->size() + text.size() > kMaxString)
        fail("the output is over the limit of " + std::to_string(kMaxString) + " bytes");
    out_->append(text);
}

std::string Renderer::capture(const std::vector<Stmt>& body) {
    std::string text;
    std::string* saved = std::exchange(out_, &text);
    exec(body);
    out_ = saved;
    return text;
}

Renderer::Flow Renderer::exec(const std::vector<Stmt>& body) {
    for (const Stmt& s : body)
        if (const Flow flow = exec(s); flow != Flow::normal) return flow;
    return Flow::normal;
}

Renderer::Flow Renderer::exec(const Stmt& s) {
    heap.charge(1);
    line_ = s.line;
    Nest nest(*this);
    switch (s.kind) {
        case Stmt::Kind::text: emit(s.text); break;
        case Stmt::Kind::output: emit(to_str(eval(*s.expr))); break;
        case Stmt::Kind::if_: return exec(truthy(eval(*s.expr)) ? s.body : s.orelse);
        case Stmt::Kind::for_: exec_for(s); break;
        case Stmt::Kind::set: assign(s, eval(*s.expr)); break;
        case Stmt::Kind::set_block:  // the block's text through the filters
            block_text_ = make_string(capture(s.body));
            assign(s, eval(*s.expr));
            break;
        case Stmt::Kind::macro:
            set_var(s.targets[0], Value(heap.make(Function{s.targets[0], &s, {}, false})));
            break;
        case Stmt::Kind::block: return exec(s.body);
        case Stmt::Kind::break_: return Flow::break_;
        case Stmt::Kind::continue_: return Flow::continue_;
    }
    return Flow::normal;
}

void Renderer::exec_for(const Stmt& s) {
    const Value iterable = eval(*s.expr);
    const List* list = iterable.is(T::list) && !s.filter ? iterable.list : nullptr;
    const size_t outer = frame_;
    if (!list) {
        std::vector<Value> items = iterate(heap, iterable);
        if (s.filter) {  // `for x in xs if cond`: the loop sees only the items that pass
            std::vector<Value> kept;
            for (Value& item : items) {
                push_frame(outer);
                assign(s, item);
                const bool keep = truthy(eval(*s.filter));
                pop_frame(outer);
                if (keep) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        list = heap.list(List::Kind::list, std::move(items));
    }
    if (list->items.empty()) return void(exec(s.orelse));
    Loop* loop = heap.make(Loop{list, 0});
    for (size_t k = 0; k < list->items.size(); ++k) {
        heap.charge(1);
        loop->index = k;
        push_frame(outer);  // each iteration has its own variables
        set_var("loop", Value(loop));
        assign(s, list->items[k]);
        const Flow flow = exec(s.body);
        pop_frame(outer);
        if (flow == Flow::break_) break;
    }
}

// ---- Expressions

Args Renderer::eval_args(const Expr& e) {
    Args args;
    for (size_t k = 1; k < e.args.size(); ++k) args.pos.push_back(eval(*e.args[k]));
    for (auto& [name, arg] : e.kwargs) args.kw.emplace_back(name, eval(*arg));
    line_ = e.line;
    return args;
}

Value Renderer::eval(const Expr& e) {
    Nest nest(*this);
    heap.charge(1);
    line_ = e.line;
    switch (e.kind) {
        case Expr::Kind::literal: return e.value;
        case Expr::Kind::name: return lookup(e.name);
        case Expr::Kind::block_text: return block_text_;
        case Expr::Kind::list:
        case Expr::Kind::tuple: {
            std::vector<Value> items;
            for (auto& a : e.args) items.push_back(eval(*a));
            return Value(
                heap.list(e.kind == Expr::Kind::list ? List::Kind::list : List::Kind::tuple,
                          std::move(items)));
        }
        case Expr::Kind::dict: {
            Dict* d = heap.make(Dict{});
            for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
                const Value key = eval(*e.args[k]);
                if (!key.is(T::string))
                    fail("dict keys must be strings here, not " + type_name(key));
                d->set(key.str(), eval(*e.args[k + 1]));
                heap.hold(1);
            }
            return Value(d);
        }
        case Expr::Kind::attr: return getattr(eval(*e.args[0]), e.name);
        case Expr::Kind::item: {
            const Value obj = eval(*e.args[0]);
            return getitem(obj, eval(*e.args[1]));
        }
        case Expr::Kind::slice: return slice(eval(*e.args[0]), e);
        case Expr::Kind::call: {
            const Value callee = eval(*e.args[0]);
            return call(callee, eval_args(e));
        }
        case Expr::Kind::filter: {
            const Value v = eval(*e.args[0]);
            return apply_filter(*this, e.name, v, eval_args(e));
        }
        case Expr::Kind::test: {
            const Value v = eval(*e.args[0]);
            return Value::boolean(apply_test(*this, e.name, v, eval_args(e)));
        }
        case Expr::Kind::unary: {
            const Value v = eval(*e.args[0]);
            if (e.name == "not") return Value::boolean(!truthy(v));
            if (v.is(T::undefined)) fail(v.str());
            if (!v.is_number())
                fail("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
            if (v.is(T::floating)) return Value(e.name == "-" ? -v.f : v.f);
            return e.name == "+" ? Value::integer(v.i) : arithmetic("-", Value::integer(0), v);
        }
        case Expr::Kind::binary: {
            const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
            line_ = e.line;
            return binary(e.name, a, b);
        }
        case Expr::Kind::logical: {  // Python's: the operand that decided
            Value a = eval(*e.args[0]);
            return truthy(a) == (e.name == "or") ? a : eval(*e.args[1]);
        }
        case Expr::Kind::compare: {  // a < b < c is a < b and b < c
            Value left = eval(*e.args[0]);
            for (size_t k = 0; k < e.ops.size(); ++k) {
                Value right = eval(*e.args[k + 1]);
                line_ = e.line;
                if (!compare_op(e.ops[k], left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case Expr::Kind::cond:
            if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
            if (e.args[2]) return eval(*e.args[2]);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
    }
    return Value::none();
}

Value Renderer::binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return make_string(to_str(a) + to_str(b));
    if (a.is(T::undefined) || b.is(T::undefined)) fail((a.is(T::undefined) ? a : b).str());
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (op == "+" && a.is(T::string) && b.is(T::string)) {
        if (!a.markup && !b.markup) return make_string(a.str() + b.str());
        // Markup + str escapes the str, as markupsafe does.
        return make_string((a.markup ? a.str() : escape_html(a.str())) +
                               (b.markup ? b.str() : escape_html(b.str())),
                           true);
    }
    if (op == "+" && is_sequence(a) && is_sequence(b) && a.list->kind == b.list->kind) {
        std::vector<Value> items = a.list->items;
        items.insert(items.end(), b.list->items.begin(), b.list->items.end());
        return Value(heap.list(a.list->kind, std::move(items)));
    }
    if (op == "+" &&
        ((a.is(T::string) && !a.markup) || (a.is(T::list) && a.list->kind == List::Kind::list)))
        fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " +
             type_name(a));
    const Value& seq = a.is_number() ? b : a;
    const Value& count = a.is_number() ? a : b;
    if (op == "*" && count.is_number() && !count.is(T::floating) &&
        (seq.is(T::string) || is_sequence(seq))) {
        const uint64_t n = std::max<int64_t>(0, count.i);
        const uint64_t size = seq.is(T::string) ? seq.str().size() : seq.list->items.size();
        if (n && size > kMaxString / n) fail("a sequence over the size limit");
        if (seq.is(T::string))
            heap.charge(n * size / 16);
        else
            heap.hold(n * size);  // before building it
        std::string text;
        std::vector<Value> items;
        for (uint64_t k = 0; k < n; ++k) {
            if (seq.is(T::string))
                text += seq.str();
            else
                items.insert(items.end(), seq.list->items.begin(), seq.list->items.end());
        }
        return seq.is(T::string) ? make_string(std::move(text), seq.markup)
                                 : Value(heap.make(List{seq.list->kind, std::move(items), {}}));
    }
    unsupported(op, a, b);
}

bool Renderer::compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==" || op == "!=") return equals(a, b) == (op == "==");
    if (op == "in" || op == "not in") {
        bool found = false;
        if (b.is(T::string)) {
            if (!a.is(T::string))
                fail("'in <string>' requires string as left operand, not " + type_name(a));
            found = b.str().find(a.str()) != std::string::npos;
        } else if (b.is(T::dict) && !b.dict->is_namespace) {
            found = a.is(T::string) && b.dict->find(a.str());
        } else if (b.is(T::list)) {
            found = std::any_of(b.list->items.begin(), b.list->items.end(),
                                [&](const Value& x) { return equals(a, x); });
        } else if (!b.is(T::undefined)) {  // an undefined value iterates as empty
            fail("argument of type '" + type_name(b) + "' is not iterable");
        }
        return found == (op == "in");
    }
    if (a.is(T::undefined) || b.is(T::undefined)) fail((a.is(T::undefined) ? a : b).str());
    const int c = compare(a, b, op.c_str());
    return op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
}

// ---- Attributes, items, slices, calls

Value Renderer::getattr(const Value& obj, const std::string& name) {
    if (obj.is(T::undefined)) fail(obj.str());
    if (obj.is(T::loop)) {
        const auto n = int64_t(obj.loop->items->items.size()), k = int64_t(obj.loop->index);
        const auto& items = obj.loop->items->items;
        const std::pair<const char*, Value> attributes[] = {
            {"index", Value::integer(k + 1)},
            {"index0", Value::integer(k)},
            {"revindex", Value::integer(n - k)},
            {"revindex0", Value::integer(n - k - 1)},
            {"first", Value::boolean(k == 0)},
            {"last", Value::boolean(k == n - 1)},
            {"length", Value::integer(n)},
            {"depth", Value::integer(1)},
            {"depth0", Value::integer(0)},
            {"previtem", k > 0 ? items[k - 1] : Value::undefined("there is no previous item")},
            {"nextitem", k + 1 < n ? items[k + 1] : Value::undefined("there is no next item")}};
        for (auto& [attribute, v] : attributes)
            if (name == attribute) return v;
    }
    if (obj.is(T::dict) && (obj.dict->is_namespace || !has_method(obj, name))) {
        if (Value* v = obj.dict->find(name)) return *v;
    }
    if (has_method(obj, name)) return Value(heap.make(Function{name, nullptr, obj, true}));
    return no_attribute(obj, name);
}

Value Renderer::getitem(const Value& obj, const Value& key) {
    if (obj.is(T::undefined)) fail(obj.str());
    if (obj.is(T::dict) && !obj.dict->is_namespace && key.is(T::string))
        if (Value* v = obj.dict->find(key.str())) return *v;
    if ((obj.is(T::string) || is_sequence(obj)) && (key.is(T::integer) || key.is(T::boolean))) {
        const std::vector<uint32_t> cps =
            obj.is(T::string) ? code_points(obj.str()) : std::vector<uint32_t>{};
        const auto n = int64_t(obj.is(T::string) ? cps.size() : obj.list->items.size());
        const int64_t k = key.i < 0 ? key.i + n : key.i;
        if (k >= 0 && k < n && !obj.is(T::string)) return obj.list->items[k];
        if (k >= 0 && k < n) {
            std::string ch;
            append_utf8(ch, cps[k]);
            return make_string(std::move(ch), obj.markup);
        }
    }
    if (key.is(T::string)) return getattr(obj, key.str());
    return Value::undefined(object_name(obj) + " has no element " + repr(key));
}

Value Renderer::slice(const Value& obj, const Expr& e) {
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
        const Value v = e.args[k + 1] ? eval(*e.args[k + 1]) : Value::none();
        if (v.is(T::undefined)) fail(v.str());
        if (v.is(T::none)) continue;
        if (!v.is(T::integer) && !v.is(T::boolean))
            return Value::undefined("slice indices must be integers or None");
        bounds[k] = v.i;
        given[k] = true;
    }
    line_ = e.line;
    if (obj.is(T::undefined)) fail(obj.str());
    if (!obj.is(T::string) && !is_sequence(obj))
        return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
    const int64_t step = bounds[2];
    if (step == 0) fail("slice step cannot be zero");
    const std::vector<uint32_t> cps =
        obj.is(T::string) ? code_points(obj.str()) : std::vector<uint32_t>{};
    const auto n = int64_t(obj.is(T::string) ? cps.size() : obj.list->items.size());
    const auto adjust = [&](int k, int64_t fallback) {  // Python's PySlice_AdjustIndices
        if (!given[k]) return fallback;
        const int64_t v = bounds[k] < 0 ? bounds[k] + n : bounds[k];
        return v < 0 ? (step < 0 ? -1 : 0) : v >= n ? (step < 0 ? n - 1 : n) : v;
    };
    const int64_t start = adjust(0, step < 0 ? n - 1 : 0), stop = adjust(1, step < 0 ? -1 : n);
    std::string text;
    std::vector<Value> items;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        if (obj.is(T::string))
            append_utf8(text, cps[k]);
        else
            items.push_back(obj.list->items[k]);
    }
    return obj.is(T::string) ? make_string(std::move(text), obj.markup)
                             : Value(heap.list(obj.list->kind, std::move(items)));
}

Value Renderer::call(const Value& callee, const Args& args) {
    if (callee.is(T::undefined)) fail(callee.str());
    if (!callee.is(T::function)) fail("'" + type_name(callee) + "' object is not callable");
    const Function& f = *callee.fn;
    return f.macro       ? call_macro(f, args)
           : f.is_method ? call_method(*this, f.self, f.name, args)
                         : call_global(*this, f.name, args);
}

Value Renderer::call_macro(const Function& f, const Args& args) {
    const auto& params = f.macro->params;
    if (args.pos.size() > params.size())
        fail("macro '" + f.name + "' takes not more than " + std::to_string(params.size()) +
             " argument(s)");
    for (auto& [name, v] : args.kw)
        if (std::none_of(params.begin(), params.end(), [&](auto& p) { return p.first == name; }))
            fail("macro '" + f.name + "' takes no keyword argument '" + name + "'");
    const size_t caller = frame_;
    push_frame(0);  // a macro sees the template's variables, not its caller's
    for (size_t k = 0; k < params.size(); ++k) {
        const auto& [name, def] = params[k];
        const auto kw =
            std::find_if(args.kw.begin(), args.kw.end(), [&](auto& a) { return a.first == name; });
        if (k < args.pos.size() && kw != args.kw.end())
            fail("macro '" + f.name + "' got multiple values for argument '" + name + "'");
        set_var(name, k < args.pos.size()   ? args.pos[k]
                      : kw != args.kw.end() ? kw->second
                      : def                 ? eval(*def)
                            : Value::undefined("parameter '" + name + "' was not provided"));
    }
    std::string text = capture(f.macro->body);
    pop_frame(caller);
    return make_string(std::move(text));
}

std::string Template::render(const nlohmann::json& context) const {
    return Renderer(*impl_).render(context);
}

std::string Template::render(const nlohmann::ordered_json& context) const {
    return Renderer(*impl_).render(context);
}

}  // namespace sy::llm::jinja
