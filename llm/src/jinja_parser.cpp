// The jinja parser: tokens to the syntax tree, with jinja2's grammar and precedence (which is
// not quite Python's: `**` is left-associative, filters bind tighter than unary minus).
#include <algorithm>
#include <initializer_list>

#include "jinja_ast.hpp"
#include "switchyard/core/error.hpp"

namespace sy::llm::jinja {
namespace {

class Parser {
  public:
    Parser(const std::string& src, std::vector<Token> tokens)
        : src_(src), toks_(std::move(tokens)) {
        for (size_t i = 0; i < src.size(); ++i)
            if (src[i] == '\n') newlines_.push_back(i);
    }

    std::vector<Stmt> run() {
        auto body = subparse({});
        if (cur().kind != Tok::eof) error("unexpected '" + cur().text + "'");
        return body;
    }

  private:
    // Nesting (of blocks and of expressions, chains like a + b + c included) is bounded, so a
    // template cannot overflow the stack, here or when its tree is evaluated or destroyed.
    struct Nest {
        explicit Nest(Parser& parser) : p(parser) { link(); }
        ~Nest() { p.depth_ -= links; }
        void link() {
            ++links;
            if (++p.depth_ > kMaxDepth)
                p.error("nested over " + std::to_string(kMaxDepth) + " deep");
        }
        Parser& p;
        int links = 0;
    };

    const Token& cur() const { return toks_[pos_]; }
    const Token& peek() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
    void next() {
        if (pos_ + 1 < toks_.size()) ++pos_;
    }
    int line() const {
        return int(std::upper_bound(newlines_.begin(), newlines_.end(), cur().offset) -
                   newlines_.begin()) +
               1;
    }
    [[noreturn]] void error(const std::string& what) const {
        syntax_error(src_, cur().offset, what);
    }

    static std::string describe(const Token& t) {
        static const char* const kinds[] = {"template data",
                                            "begin of statement block",
                                            "end of statement block",
                                            "begin of print statement",
                                            "end of print statement",
                                            "",
                                            "string",
                                            "number",
                                            "number",
                                            "",
                                            "end of template"};
        return *kinds[int(t.kind)] ? kinds[int(t.kind)] : "'" + t.text + "'";
    }
    bool is_op(const char* op) const { return cur().kind == Tok::op && cur().text == op; }
    bool is_name(const char* name) const { return cur().kind == Tok::name && cur().text == name; }
    bool skip_op(const char* op) { return is_op(op) && (next(), true); }
    bool skip_name(const char* name) { return is_name(name) && (next(), true); }
    void expect_op(const char* op) {
        if (!skip_op(op)) error(std::string("expected '") + op + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().kind != Tok::name) error("expected a name, got " + describe(cur()));
        std::string name = cur().text;
        next();
        return name;
    }
    void expect_block_end() {
        if (cur().kind != Tok::block_end)
            error("expected end of statement block, got " + describe(cur()));
        next();
    }
    void expect_end_tag(const char* name) {
        if (!skip_name(name)) error(std::string("expected '") + name + "'");
        expect_block_end();
    }

    ExprPtr node(Expr::Kind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }
    ExprPtr node(Expr::Kind kind, int line, ExprPtr first) {
        auto e = node(kind, line);
        e->args.push_back(std::move(first));
        return e;
    }

    // ---- Statements

    // The statements up to a {% tag %} named in `ends` (left as the current token) or the end.
    std::vector<Stmt> subparse(std::initializer_list<const char*> ends) {
        Nest nest(*this);
        std::vector<Stmt> body;
        for (;;) {
            const Token& t = cur();
            if (t.kind == Tok::eof) {
                if (ends.size() == 0) return body;
                std::string names;
                for (const char* e : ends)
                    names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
                error("unexpected end of template, expected " + names);
            }
            Stmt s;
            s.line = line();
            if (t.kind == Tok::data) {
                s.kind = Stmt::Kind::text;
                s.text = t.text;
                next();
            } else if (t.kind == Tok::var_begin) {
                next();
                s.kind = Stmt::Kind::output;
                s.expr = parse_tuple(true, false, {});
                if (cur().kind != Tok::var_end)
                    error("expected end of print statement, got " + describe(cur()));
                next();
            } else if (t.kind == Tok::block_begin) {
                next();
                if (cur().kind == Tok::name)
                    for (const char* e : ends)
                        if (cur().text == e) return body;
                statement(s);
            } else {
                error("unexpected " + describe(t));
            }
            body.push_back(std::move(s));
        }
    }

    void statement(Stmt& s) {
        if (cur().kind != Tok::name) error("expected a tag name, got " + describe(cur()));
        const std::string tag = cur().text;
        next();
        if (tag == "if") {
            parse_if(s);
        } else if (tag == "for") {
            parse_for(s);
        } else if (tag == "set") {
            parse_set(s);
        } else if (tag == "macro") {
            parse_macro(s);
        } else if (tag == "generation") {  // HF's tag marking the assistant's tokens
            s.kind = Stmt::Kind::block;
            expect_block_end();
            s.body = subparse({"endgeneration"});
            expect_end_tag("endgeneration");
        } else if (tag == "print") {
            s.kind = Stmt::Kind::output;
            s.expr = parse_tuple(true, false, {});
            expect_block_end();
        } else if (tag == "break" || tag == "continue") {
            if (loops_ == 0)
                syntax_error(src_, toks_[pos_ - 1].offset, "'" + tag + "' outside a loop");
            s.kind = tag == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
            expect_block_end();
        } else {
            syntax_error(src_, toks_[pos_ - 1].offset,
                         tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif"
                             ? "unexpected tag '" + tag + "'"
                             : "unsupported tag '" + tag + "'");
        }
    }

    void parse_if(Stmt& s) {
        s.kind = Stmt::Kind::if_;
        s.expr = parse_tuple(false, false, {});
        expect_block_end();
        s.body = subparse({"elif", "else", "endif"});
        if (skip_name("elif")) {
            Stmt elif;
            elif.line = line();
            parse_if(elif);
            s.orelse.push_back(std::move(elif));
            return;  // the innermost elif took the endif
        }
        if (skip_name("else")) {
            expect_block_end();
            s.orelse = subparse({"endif"});
        }
        expect_end_tag("endif");
    }

    void parse_for(Stmt& s) {
        s.kind = Stmt::Kind::for_;
        assign_targets(s, false);
        if (!skip_name("in")) error("expected 'in', got " + describe(cur()));
        s.expr = parse_tuple(false, false, {"recursive"});
        if (skip_name("if")) s.filter = parse_expression(true);
        if (is_name("recursive")) error("recursive loops are not supported");
        expect_block_end();
        ++loops_;
        s.body = subparse({"endfor", "else"});
        --loops_;
        if (skip_name("else")) {
            expect_block_end();
            s.orelse = subparse({"endfor"});
        }
        expect_end_tag("endfor");
    }

    // `name`, `a, b`, `(a, b)`, or (for set) `ns.attr`.
    void assign_targets(Stmt& s, bool with_namespace) {
        if (with_namespace && cur().kind == Tok::name && peek().kind == Tok::op &&
            peek().text == ".") {
            s.attribute_target = true;
            s.targets.push_back(expect_name());
            next();
            s.targets.push_back(expect_name());
            return;
        }
        const bool parens = skip_op("(");
        do {
            if (parens && is_op(")")) break;
            s.targets.push_back(expect_name());
        } while (skip_op(","));
        if (parens) expect_op(")");
        for (const auto& t : s.targets)
            if (t == "true" || t == "false" || t == "none" || t == "True" || t == "False" ||
                t == "None")
                error("cannot assign to '" + t + "'");
    }

    void parse_set(Stmt& s) {
        assign_targets(s, true);
        if (skip_op("=")) {
            s.kind = Stmt::Kind::set;
            s.expr = parse_tuple(true, false, {});
            expect_block_end();
            return;
        }
        s.kind = Stmt::Kind::set_block;
        s.expr = filters(node(Expr::Kind::block_text, s.line));
        expect_block_end();
        s.body = subparse({"endset"});
        expect_end_tag("endset");
    }

    void parse_macro(Stmt& s) {
        s.kind = Stmt::Kind::macro;
        s.targets.push_back(expect_name());
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string name = expect_name();
            ExprPtr def;
            if (skip_op("="))
                def = parse_expression(true);
            else if (!s.params.empty() && s.params.back().second)
                error("non-default argument follows default argument");
            s.params.emplace_back(std::move(name), std::move(def));
        }
        expect_op(")");
        expect_block_end();
        const int loops = loops_;
        loops_ = 0;
        s.body = subparse({"endmacro"});
        loops_ = loops;
        expect_end_tag("endmacro");
    }

    // ---- Expressions

    // Expressions separated by commas make a tuple; `extra_ends` names end it as well.
    ExprPtr parse_tuple(bool with_cond, bool explicit_parens,
                        std::initializer_list<const char*> extra_ends) {
        const int start = line();
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        for (;;) {
            if (!items.empty()) expect_op(",");
            const Tok k = cur().kind;
            bool end = k == Tok::var_end || k == Tok::block_end || is_op(")");
            for (const char* e : extra_ends) end = end || is_name(e);
            if (end) break;
            items.push_back(parse_expression(with_cond));
            if (!is_op(",")) break;
            is_tuple = true;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) error("expected an expression, got " + describe(cur()));
        }
        auto e = node(Expr::Kind::tuple, start);
        e->args = std::move(items);
        return e;
    }

    ExprPtr parse_expression(bool with_cond) { return with_cond ? parse_cond() : parse_or(); }

    ExprPtr parse_cond() {
        Nest nest(*this);
        ExprPtr e = parse_or();
        while (is_name("if")) {
            nest.link();
            auto c = node(Expr::Kind::cond, line());
            next();
            c->args.push_back(parse_or());
            c->args.push_back(std::move(e));
            c->args.push_back(skip_name("else") ? parse_cond() : nullptr);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr logical(ExprPtr left, const char* op, ExprPtr (Parser::*operand)()) {
        for (Nest chain(*this); is_name(op); chain.link()) {
            auto e = node(Expr::Kind::logical, line(), std::move(left));
            e->name = op;
            next();
            e->args.push_back((this->*operand)());
            left = std::move(e);
        }
        return left;
    }
    ExprPtr parse_or() { return logical(parse_and(), "or", &Parser::parse_and); }
    ExprPtr parse_and() { return logical(parse_not(), "and", &Parser::parse_not); }

    ExprPtr parse_not() {
        Nest nest(*this);
        if (is_name("not")) {
            auto e = node(Expr::Kind::unary, line());
            e->name = "not";
            next();
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        ExprPtr first = parse_math1();
        ExprPtr e;
        for (;;) {
            std::string op;
            const Token& t = cur();
            if (t.kind == Tok::op && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                      t.text == ">" || t.text == "<=" || t.text == ">=")) {
                op = t.text;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().kind == Tok::name && peek().text == "in") {
                op = "not in";
                next();
                next();
            } else {
                break;
            }
            if (!e) {
                const int ln = first->line;
                e = node(Expr::Kind::compare, ln, std::move(first));
            }
            e->ops.push_back(op);
            e->args.push_back(parse_math1());
        }
        return e ? std::move(e) : std::move(first);
    }

    ExprPtr binary(ExprPtr left, std::initializer_list<const char*> ops,
                   ExprPtr (Parser::*operand)()) {
        for (Nest chain(*this);; chain.link()) {
            const char* found = nullptr;
            for (const char* op : ops)
                if (is_op(op)) found = op;
            if (!found) return left;
            auto e = node(Expr::Kind::binary, line(), std::move(left));
            e->name = found;
            next();
            e->args.push_back((this->*operand)());
            left = std::move(e);
        }
    }
    ExprPtr parse_math1() { return binary(parse_concat(), {"+", "-"}, &Parser::parse_concat); }
    ExprPtr parse_concat() { return binary(parse_math2(), {"~"}, &Parser::parse_math2); }
    ExprPtr parse_math2() { return binary(parse_pow(), {"*", "/", "//", "%"}, &Parser::parse_pow); }
    ExprPtr parse_pow() { return binary(parse_unary(), {"**"}, &Parser::parse_unary); }
    ExprPtr parse_unary() { return parse_unary_with(true); }

    ExprPtr parse_unary_with(bool with_filter) {
        Nest nest(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = node(Expr::Kind::unary, line());
            e->name = cur().text;
            next();
            e->args.push_back(parse_unary_with(false));
        } else {
            e = parse_primary();
        }
        e = postfix(std::move(e));
        return with_filter ? filter_expr(std::move(e)) : std::move(e);
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        const int ln = line();
        if (t.kind == Tok::name) {
            auto e = node(Expr::Kind::literal, ln);
            if (t.text == "true" || t.text == "True")
                e->value = Value::boolean(true);
            else if (t.text == "false" || t.text == "False")
                e->value = Value::boolean(false);
            else if (t.text == "none" || t.text == "None")
                e->value = Value::none();
            else {
                e->kind = Expr::Kind::name;
                e->name = t.text;
            }
            next();
            return e;
        }
        if (t.kind == Tok::string) {
            std::string s;
            while (cur().kind == Tok::string) {  // adjacent literals join, as in Python
                s += cur().text;
                next();
            }
            auto e = node(Expr::Kind::literal, ln);
            e->value = Value::string(std::move(s));
            return e;
        }
        if (t.kind == Tok::integer || t.kind == Tok::number) {
            auto e = node(Expr::Kind::literal, ln);
            e->value = t.kind == Tok::integer ? Value::integer(t.i) : Value(t.f);
            next();
            return e;
        }
        if (skip_op("(")) {
            ExprPtr e = parse_tuple(true, true, {});
            expect_op(")");
            return e;
        }
        if (skip_op("[")) {
            auto e = node(Expr::Kind::list, ln);
            while (!is_op("]")) {
                if (!e->args.empty()) expect_op(",");
                if (is_op("]")) break;
                e->args.push_back(parse_expression(true));
            }
            expect_op("]");
            return e;
        }
        if (skip_op("{")) {
            auto e = node(Expr::Kind::dict, ln);
            while (!is_op("}")) {
                if (!e->args.empty()) expect_op(",");
                if (is_op("}")) break;
                e->args.push_back(parse_expression(true));
                expect_op(":");
                e->args.push_back(parse_expression(true));
            }
            expect_op("}");
            return e;
        }
        error("unexpected " + describe(t));
    }

    ExprPtr postfix(ExprPtr e) {
        for (Nest chain(*this);; chain.link()) {
            const int ln = line();
            if (skip_op(".")) {
                if (cur().kind == Tok::name) {
                    e = node(Expr::Kind::attr, ln, std::move(e));
                    e->name = expect_name();
                } else if (cur().kind == Tok::integer) {
                    auto index = node(Expr::Kind::literal, ln);
                    index->value = Value::integer(cur().i);
                    next();
                    e = node(Expr::Kind::item, ln, std::move(e));
                    e->args.push_back(std::move(index));
                } else {
                    error("expected a name or a number after '.'");
                }
            } else if (skip_op("[")) {
                e = node(Expr::Kind::item, ln, std::move(e));
                subscript(*e);
                expect_op("]");
            } else if (is_op("(")) {
                e = node(Expr::Kind::call, ln, std::move(e));
                call_args(*e);
            } else {
                return e;
            }
        }
    }

    // `x[i]` or a slice `x[a:b:c]` (the slice's missing parts are null).
    void subscript(Expr& e) {
        std::vector<ExprPtr> parts;
        parts.push_back(is_op(":") ? nullptr : parse_expression(true));
        if (!is_op(":")) {
            if (is_op(",")) error("subscripts with commas are not supported");
            e.args.push_back(std::move(parts[0]));
            return;
        }
        e.kind = Expr::Kind::slice;
        for (int k = 0; k < 2; ++k) {
            if (!skip_op(":")) {
                parts.push_back(nullptr);
                continue;
            }
            parts.push_back(is_op(":") || is_op("]") ? nullptr : parse_expression(true));
        }
        for (auto& p : parts) e.args.push_back(std::move(p));
    }

    void call_args(Expr& e) {
        expect_op("(");
        while (!is_op(")")) {
            if (e.args.size() > 1 || !e.kwargs.empty()) {
                expect_op(",");
                if (is_op(")")) break;
            }
            if (is_op("*") || is_op("**")) error("*args and **kwargs are not supported");
            if (cur().kind == Tok::name && peek().kind == Tok::op && peek().text == "=") {
                std::string key = expect_name();
                next();
                e.kwargs.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.kwargs.empty()) error("a positional argument follows keyword arguments");
                e.args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr filter_expr(ExprPtr e) {
        for (Nest chain(*this);; chain.link()) {
            if (is_op("|")) {
                e = filters(std::move(e));
            } else if (is_name("is")) {
                e = test(std::move(e));
            } else if (is_op("(")) {
                e = node(Expr::Kind::call, line(), std::move(e));
                call_args(*e);
            } else {
                return e;
            }
        }
    }

    // `x | f | g(1)`: each filter's input is its first argument.
    ExprPtr filters(ExprPtr e) {
        for (Nest chain(*this); skip_op("|"); chain.link()) {
            e = node(Expr::Kind::filter, line(), std::move(e));
            e->name = dotted_name();
            if (is_op("(")) call_args(*e);
        }
        return e;
    }

    std::string dotted_name() {
        std::string name = expect_name();
        while (skip_op(".")) name += "." + expect_name();
        return name;
    }

    ExprPtr test(ExprPtr e) {
        const int ln = line();
        next();  // is
        const bool negated = skip_name("not");
        e = node(Expr::Kind::test, ln, std::move(e));
        e->name = dotted_name();
        const Token& t = cur();
        if (is_op("(")) {
            call_args(*e);
        } else if ((t.kind == Tok::name || t.kind == Tok::string || t.kind == Tok::integer ||
                    t.kind == Tok::number || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) error("you cannot chain multiple tests with is");
            e->args.push_back(postfix(parse_primary()));  // `x is divisibleby 3`
        }
        if (!negated) return e;
        auto n = node(Expr::Kind::unary, ln, std::move(e));
        n->name = "not";
        return n;
    }

    const std::string& src_;
    std::vector<Token> toks_;
    std::vector<size_t> newlines_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loops_ = 0;  // enclosing for loops (of this macro), where break and continue belong
};

}  // namespace

std::vector<Stmt> parse(const std::string& source) {
    return Parser(source, tokenize(source)).run();
}

Template::Template(std::string source) {
    auto impl = std::make_shared<Impl>();
    impl->source = normalize_source(source);
    try {
        impl->body = parse(impl->source);
    } catch (const RenderError& e) {  // a string literal over the size limit
        throw Error("jinja: " + e.message);
    }
    impl_ = std::move(impl);
}

}  // namespace sy::llm::jinja
