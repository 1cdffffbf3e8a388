#!/usr/bin/env python3
"""The functions of k3's C++ sources, found by brace matching (no compiler
needed, so the lint runs before any build): how long each one is, and which
are declared but never used.

  scripts/cxx_functions.py long N ROOT       functions over N lines in lib/ and tools/
  scripts/cxx_functions.py dead ROOT         functions of lib/ that nothing names

`long` prints "LINES FILE:LINE NAME" per function, longest first. A
function's length runs from the line of its name to its closing brace, as
ctags counts it; lambdas and local classes count with the function around
them.

`dead` prints "FILE:LINE NAME" for every function declared or defined in
lib/ whose name appears nowhere else in lib/, tools/, tests/, bench/ or
fuzz/ (comments and string literals do not count): only at the places that
declare or define it. Operators, constructors, destructors, main and
overrides of a virtual function (called through the base class, which may
live in a library outside lib/, as httplib's do) are never reported (they
are used without being named).

Exits 2 when a file's braces do not balance (a construct this reader does
not know), naming the file, so a count never silently drops a file.
"""
import os
import re
import sys

CODE_EXT = ('.h', '.cpp', '.cc')
IDENT = re.compile(r'[A-Za-z_]\w*')
# A member function marked override: its name, then its parameter list (one
# level of nested parentheses), then qualifiers up to `override`.
OVERRIDE = re.compile(r'([A-Za-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)[\w\s&]*?\boverride\b')
# What may follow a function's parameter list before its body or ';'.
QUALIFIERS = re.compile(r'^(\s|const\b|noexcept\b|override\b|final\b|mutable\b|&|HWY_ATTR\b|'
                        r'=\s*(0|default|delete)\b)*$')
NOT_FUNCTIONS = {'if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'alignof', 'decltype',
                 'static_assert', 'alignas', 'noexcept', 'requires', 'operator'}


TOKENS = re.compile(r'''
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>(?<!\w)R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)")
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>(?<!\w)'(?:\\.|[^'\\\n])*')  # (?<!\w): 1'000 is a number
  | (?P<directive>^[ \t]*\#(?:\\\n|[^\n])*)
''', re.S | re.M | re.X)


def strip(text, keep_preprocessor):
    """`text` with comments, string and character literals (and, unless
    keep_preprocessor, preprocessor lines) blanked to spaces, newlines and
    every offset kept."""
    def blank(m):
        t = m.group(0)
        if m.lastgroup == 'directive' and keep_preprocessor:
            return t
        if m.lastgroup in ('string', 'char', 'raw'):
            q = t[-1]
            return q + re.sub(r'[^\n]', ' ', t[1:-1]) + q
        return re.sub(r'[^\n]', ' ', t)
    return TOKENS.sub(blank, text)


def top_level(head, ch):
    """Index of the first `ch` in `head` outside (), <> is not tracked."""
    depth = 0
    for k, c in enumerate(head):
        if c == '(':
            if depth == 0 and ch == '(':
                return k
            depth += 1
        elif c == ')':
            depth -= 1
        elif c == ch and depth == 0:
            return k
    return -1


def signature_name(head):
    """The function a head ("int Foo::bar(int x) const") names, or None when
    the head is not a function's signature."""
    p = top_level(head, '(')
    if p < 0:
        return None
    eq = top_level(head[:p], '=')
    if eq >= 0:
        return None  # an initializer: "auto f = [](...)", "Foo x = Foo(...)"
    m = re.search(r'(~?[A-Za-z_][\w]*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$', head[:p])
    if not m:
        return None
    name = re.sub(r'\s+', '', m.group(1))
    last = name.split('::')[-1]
    if last in NOT_FUNCTIONS or re.search(r'\boperator\b', head[:p]) or last.isupper():
        return None  # a keyword, an operator, a macro (HWY_EXPORT(f))
    close = head.rfind(')')
    tail = head[close + 1:]
    if not (QUALIFIERS.match(tail) or re.match(r'\s*(const\s*)?->', tail) or re.match(r'\s*:[^:]', tail)
            or re.match(r'\s*(const\s*)?(noexcept\s*)?requires\b', tail)):
        # The tail after the last ')' is not a qualifier: maybe an init
        # list's last member or a trailing return with parentheses.
        if not re.search(r'\)\s*:[^:]', head[p:]) and '->' not in head[p:]:
            return None
    return name


def scan(path, text):
    """Functions defined in `text` as (name, first line, last line, is_definition)."""
    # __attribute__((always_inline)) before a signature is not its parameter list.
    code = re.sub(r'__attribute__\s*\(\(.*?\)\)', lambda m: ' ' * len(m.group(0)), strip(text, False))
    found = []
    stack = []  # 'scope' (namespace, class), 'fn' (a body), 'init' (braces in an initializer), 'member'
    head_start = 0
    line = 1
    head_line = None
    fn_start = None
    i = 0
    for i, c in enumerate(code):
        if c == '\n':
            line += 1
            continue
        if c == '{':
            if all(s == 'scope' for s in stack):
                head = code[head_start:i]
                name = signature_name(head)
                if name is None and re.search(r'\)\s*:[^:]', head) and re.search(r'[\w>]\s*$', head) and \
                        signature_name(head[:head.rfind(')') + 1] + ' {') is not None:
                    stack.append('member')  # b_{x} in a constructor's init list
                    continue
                if name is not None:
                    p = top_level(head, '(')
                    name_line = line - head[p:].count('\n')
                    stack.append('fn')
                    fn_start = (name, name_line)
                elif top_level(head, '=') >= 0:
                    stack.append('init')
                else:
                    stack.append('scope')
                    head_start = i + 1
                continue
            stack.append('init' if stack and stack[-1] in ('init', 'member') else 'block')
            continue
        if c == '}':
            if not stack:
                raise ValueError('%s:%d: a closing brace without its opening one' % (path, line))
            kind = stack.pop()
            if kind == 'fn':
                found.append((fn_start[0], fn_start[1], line, True))
                head_start = i + 1
            elif kind == 'scope':
                head_start = i + 1
            continue
        if c == ';' and all(s == 'scope' for s in stack):
            head = code[head_start:i]
            name = signature_name(head)
            if name is not None and not re.match(r'\s*(using|typedef|friend|return)\b', head):
                p = top_level(head, '(')
                found.append((name, line - head[p:].count('\n'), line, False))
            head_start = i + 1
    if stack:
        raise ValueError('%s: %d braces left open at the end (a construct this reader does not know)' %
                         (path, len(stack)))
    return found


def files(root, folders):
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(CODE_EXT):
                    yield os.path.join(dirpath, f)


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()


def main(argv):
    if len(argv) < 3 or argv[1] not in ('long', 'dead') or (argv[1] == 'long' and len(argv) != 4):
        print(__doc__.strip().split('\n\n')[1], file=sys.stderr)
        return 2
    root = argv[-1]
    if not os.path.isdir(os.path.join(root, 'lib')):
        print('cxx_functions: %s/lib: not a directory (give the repository)' % root, file=sys.stderr)
        return 2
    try:
        if argv[1] == 'long':
            limit = int(argv[2])
            rows = []
            for path in files(root, ('lib', 'tools')):
                for name, first, last, is_def in scan(path, read(path)):
                    if is_def and last - first + 1 > limit:
                        rows.append((last - first + 1, os.path.relpath(path, root), first, name))
            for n, path, first, name in sorted(rows, key=lambda r: (-r[0], r[1], r[2])):
                print('%d %s:%d %s' % (n, path, first, name))
            return 0
        sites = {}  # name -> {(path, line)}
        overrides = set()
        for path in files(root, ('lib',)):
            overrides.update(m.group(1) for m in OVERRIDE.finditer(strip(read(path), False)))
        for path in files(root, ('lib',)):
            rel = os.path.relpath(path, root)
            for name, first, last, _ in scan(path, read(path)):
                short = name.split('::')[-1]
                if short == 'main' or short.startswith('~') or (len(name.split('::')) > 1 and
                                                                 name.split('::')[-2] == short):
                    continue  # main, a constructor or a destructor: used without being named
                if short in overrides:
                    continue  # called through its base class
                sites.setdefault(short, set()).add((rel, first))
        uses = {}
        for path in files(root, ('lib', 'tools', 'tests', 'bench', 'fuzz')):
            rel = os.path.relpath(path, root)
            for number, text in enumerate(strip(read(path), keep_preprocessor=True).split('\n'), 1):
                for word in IDENT.findall(text):
                    if word in sites and (rel, number) not in sites[word]:
                        uses[word] = uses.get(word, 0) + 1
        for name in sorted(n for n in sites if n not in uses):
            for rel, first in sorted(sites[name]):
                print('%s:%d %s' % (rel, first, name))
        return 0
    except ValueError as e:
        print('cxx_functions: %s' % e, file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
