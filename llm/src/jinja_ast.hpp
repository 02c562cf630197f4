// Private to the jinja interpreter (switchyard/llm/jinja.hpp): tokens, the syntax tree, the
// values a render computes with, and the Python semantics they follow.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "switchyard/llm/jinja.hpp"

namespace sy::llm::jinja {

// Bounds that keep any template from crashing or hanging the process.
constexpr int kMaxDepth = 200;              // nesting when parsing, and calls and values
constexpr uint64_t kMaxSteps = 50'000'000;  // expressions, statements, items, bytes / 16
constexpr uint64_t kMaxItems = 4'000'000;   // of the lists and dicts a render keeps until its end
constexpr size_t kMaxString = size_t(64) << 20;  // the output and any one string
constexpr int64_t kMaxRange = 100'000;           // range()'s length, as HF's sandbox allows

// ---- Tokens (jinja_lexer.cpp)

enum class Tok {
    data,
    block_begin,
    block_end,
    var_begin,
    var_end,
    name,
    string,
    integer,
    number,
    op,
    eof
};

struct Token {
    Tok kind;
    std::string text;  // data, name, string (unescaped), operator
    int64_t i = 0;
    double f = 0;
    size_t offset = 0;  // in the normalized source, for line and column
};

// jinja2's newline handling: "\r\n" and "\r" become "\n" and one trailing newline is dropped.
std::string normalize_source(std::string_view source);
// The tokens with trim_blocks, lstrip_blocks and the -/+ modifiers already applied to the data.
std::vector<Token> tokenize(const std::string& source);
[[noreturn]] void syntax_error(const std::string& source, size_t offset, const std::string& what);

// ---- Values

struct List;
struct Dict;
struct Function;
struct Loop;

struct Value {
    enum class Type : uint8_t {
        undefined,
        none,
        boolean,
        integer,
        floating,
        string,
        list,
        dict,
        function,
        loop
    };
    Type type = Type::undefined;
    bool markup = false;  // a string from |safe or |e: `+` escapes the other side, as Markup does
    union {
        int64_t i = 0;  // an integer, or a bool's 0 or 1
        double f;
        List* list;
        Dict* dict;
        Function* fn;
        Loop* loop;
    };
    // The text of a string; for an undefined value, the error that using it raises.
    std::shared_ptr<const std::string> s;

    Value() = default;
    Value(Type t, int64_t v) : type(t), i(v) {}
    explicit Value(double v) : type(Type::floating), f(v) {}
    explicit Value(List* v) : type(Type::list), list(v) {}
    explicit Value(Dict* v) : type(Type::dict), dict(v) {}
    explicit Value(Function* v) : type(Type::function), fn(v) {}
    explicit Value(Loop* v) : type(Type::loop), loop(v) {}
    static Value undefined(std::string why);
    static Value none() { return Value(Type::none, 0); }
    static Value boolean(bool v) { return Value(Type::boolean, v); }
    static Value integer(int64_t v) { return Value(Type::integer, v); }
    static Value string(std::string v);

    bool is(Type t) const { return type == t; }
    bool is_number() const {
        return type == Type::integer || type == Type::floating || type == Type::boolean;
    }
    const std::string& str() const { return *s; }
};

struct List {
    // Python's sequence types the templates meet: generators (map, select, ...) iterate but have
    // no len() and no JSON form; dict views print as dict_items([...]).
    enum class Kind { list, tuple, generator, dict_keys, dict_values, dict_items };
    Kind kind = Kind::list;
    std::vector<Value> items;
    std::string generator;  // the generator's function, for its repr
};

struct Dict {
    bool is_namespace = false;
    std::vector<std::pair<std::string, Value>> items;  // in insertion order, as Python's dicts
    Value* find(std::string_view key);
    void set(std::string_view key, Value v);
};

struct Stmt;

struct Function {
    std::string name;             // a global, or a method of `self`
    const Stmt* macro = nullptr;  // a {% macro %}
    Value self;                   // a method's object
    bool is_method = false;
};

struct Loop {
    const List* items = nullptr;
    size_t index = 0;
};

// Everything a render allocates: lists and dicts live until the render ends, so references
// between them (even cycles through a namespace) cost no recursion and leak nothing. Their
// items are bounded (kMaxItems), and so is the work (kMaxSteps).
class Heap {
  public:
    template <class Object>
    Object* make(Object object, uint64_t items = 1) {
        hold(items);
        auto& store = std::get<std::deque<Object>>(store_);
        store.push_back(std::move(object));
        return &store.back();
    }
    List* list(List::Kind kind = List::Kind::list, std::vector<Value> items = {});
    void charge(uint64_t steps);  // throws RenderError past kMaxSteps
    void hold(uint64_t items);    // throws RenderError past kMaxItems

  private:
    std::tuple<std::deque<List>, std::deque<Dict>, std::deque<Function>, std::deque<Loop>> store_;
    uint64_t steps_ = 0, items_ = 0;
};

// A runtime error without its line; the renderer adds the line of the expression at fault.
struct RenderError {
    std::string message;
};
[[noreturn]] void fail(std::string message);

// ---- Python semantics (jinja_value.cpp)

// UTF-8: the code point at s[i] and its length (a byte that is not UTF-8 reads as itself).
std::pair<uint32_t, size_t> decode(std::string_view s, size_t i);
void append_utf8(std::string& out, uint32_t cp);
// Python's escape of a code point in a string's repr: \xhh, \uhhhh or \Uhhhhhhhh.
void append_escape(std::string& out, uint32_t cp);
std::vector<uint32_t> code_points(std::string_view s);
bool is_space(uint32_t cp);  // str.isspace() and the regex \s
std::string rstrip_space(std::string_view s);

std::string type_name(const Value& v);  // Python's type(v).__name__
std::string to_str(const Value& v);     // str(v)
std::string repr(const Value& v);       // repr(v)
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, const char* op);  // <0, 0, >0, or TypeError
int64_t length(const Value& v);                               // len(v), or TypeError

// The items a `for` visits: a string's characters, a dict's keys, a list's items.
std::vector<Value> iterate(Heap& heap, const Value& v);

struct JsonOptions {
    bool ensure_ascii = false;
    bool sort_keys = false;
    bool indent = false;
    std::string indent_text;
    std::string item_separator = ", ";
    std::string key_separator = ": ";
};
std::string to_json(const Value& v, const JsonOptions& options);
template <class Json>
Value from_json(Heap& heap, const Json& json, int depth = 0);

// ---- The syntax tree (jinja_parser.cpp)

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        literal,
        name,
        list,
        tuple,
        dict,
        attr,
        item,
        slice,
        call,
        filter,
        test,
        unary,
        binary,
        logical,
        compare,
        cond,
        block_text
    };
    Kind kind;
    int line = 0;
    Value value;                                          // literal
    std::string name;                                     // name, attribute, filter, test, operator
    std::vector<ExprPtr> args;                            // operands; object first
    std::vector<std::pair<std::string, ExprPtr>> kwargs;  // call, filter and test keywords
    std::vector<std::string> ops;  // compare: one per operand after the first
};

struct Stmt {
    enum class Kind { text, output, if_, for_, set, set_block, macro, block, break_, continue_ };
    Kind kind;
    int line = 0;
    std::string text;                  // text
    ExprPtr expr;                      // output, if test, for iterable, set value, block filters
    ExprPtr filter;                    // for ... if filter
    std::vector<std::string> targets;  // for and set names; {"ns", "attr"} when attribute
    bool attribute_target = false;
    std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults
    std::vector<Stmt> body, orelse;
};

std::vector<Stmt> parse(const std::string& source);

struct Template::Impl {
    std::string source;
    std::vector<Stmt> body;
};

// ---- Rendering (jinja_eval.cpp, jinja_builtins.cpp)

struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

class Renderer {
  public:
    explicit Renderer(const Template::Impl& tpl) : tpl_(tpl) {}
    template <class Json>
    std::string render(const Json& context);

    Heap heap;
    // Python's and jinja2's rules: x.name tries the attribute, then the item; x[key] the
    // reverse; either gives an undefined value when both fail.
    Value getattr(const Value& obj, const std::string& name);
    Value getitem(const Value& obj, const Value& key);
    Value call(const Value& callee, const Args& args);
    Value make_string(std::string s, bool markup = false);

  private:
    enum class Flow { normal, break_, continue_ };
    struct Frame {
        std::vector<std::pair<std::string, Value>> vars;
        size_t parent = 0;
    };
    struct Nest {
        explicit Nest(Renderer& renderer);
        ~Nest() { --r.depth_; }
        Renderer& r;
    };

    Flow exec(const std::vector<Stmt>& body);
    Flow exec(const Stmt& s);
    void exec_for(const Stmt& s);
    void assign(const Stmt& s, const Value& v);  // to the names of a set or for
    std::string capture(const std::vector<Stmt>& body);
    void emit(std::string_view text);
    Value eval(const Expr& e);
    Args eval_args(const Expr& e);
    Value lookup(const std::string& name);
    void set_var(const std::string& name, Value v);
    void push_frame(size_t parent);
    void pop_frame(size_t previous);
    Value binary(const std::string& op, const Value& a, const Value& b);
    bool compare_op(const std::string& op, const Value& a, const Value& b);
    Value slice(const Value& obj, const Expr& e);
    Value call_macro(const Function& f, const Args& args);

    const Template::Impl& tpl_;
    std::vector<Frame> frames_;
    size_t frame_ = 0;
    std::string output_;
    std::string* out_ = &output_;
    Value block_text_;  // a {% set %} block's text, for its filters
    int line_ = 0;      // of the expression being evaluated, for errors
    int depth_ = 0;
};

// The filters, tests, methods and globals.
Value apply_filter(Renderer& r, const std::string& name, const Value& v, const Args& args);
bool apply_test(Renderer& r, const std::string& name, const Value& v, const Args& args);
bool has_method(const Value& self, std::string_view name);
Value call_method(Renderer& r, const Value& self, const std::string& name, const Args& args);
bool is_global(std::string_view name);
Value call_global(Renderer& r, const std::string& name, const Args& args);
std::string escape_html(std::string_view s);  // markupsafe.escape

}  // namespace sy::llm::jinja
