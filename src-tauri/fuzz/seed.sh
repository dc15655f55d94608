#!/usr/bin/env bash
# Fills corpus/<target>/ with seed inputs: the recorded provider streams and MCP transcripts in
# shared/fixtures (FIXTURES overrides where), and a few hand-written cases for the rest. Each
# seed starts with the target's header byte (see the doc comment of each fuzz target).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fixtures=${FIXTURES:-$here/../../../shared/fixtures}
corpus=$here/corpus

# byte N: writes the byte with value N.
byte() { printf "\\$(printf '%03o' "$1")"; }

# lines TARGET PREFIX: a seed per line of standard input (through printf %b), no header byte.
lines() {
    mkdir -p "$corpus/$1"
    local n=0 line
    while IFS= read -r line; do
        n=$((n + 1))
        printf '%b' "$line" >"$corpus/$1/$2_$n"
    done
}

# seed TARGET NAME HEADER TEXT: one hand-written seed (TEXT through printf %b: \n, \r, \0).
seed() {
    mkdir -p "$corpus/$1"
    { byte "$3"; printf '%b' "$4"; } >"$corpus/$1/$2"
}

# sse_decode: bits 0-1 the protocol, bits 2-7 the chunk size - 1 (here 16-byte chunks).
mkdir -p "$corpus/sse_decode"
for dir in openai-chat:0 openai-compat:0 local-servers:0 openai-responses:1 anthropic:2; do
    name=${dir%:*}
    protocol=${dir#*:}
    for file in "$fixtures/sse/$name"/*.sse; do
        [ -e "$file" ] || continue
        { byte $((protocol | 15 << 2)); cat "$file"; } \
            >"$corpus/sse_decode/${name}_$(basename "$file")"
    done
done
# No Gemini recording: a hand-written one.
seed sse_decode gemini_text_and_call $((3 | 15 << 2)) \
    'data: {"candidates":[{"content":{"parts":[{"text":"Hi"},{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}\r\n\r\n'

# mcp_messages: bit 0 the transport (0 stdio, 1 legacy SSE), bits 1-7 the read size - 1 (16).
mkdir -p "$corpus/mcp_messages"
for file in "$fixtures"/mcp/*.transcript; do
    [ -e "$file" ] || continue
    name=$(basename "$file" .transcript)
    { byte $((15 << 1)); sed -n 's/^STDOUT: //p' "$file"; } >"$corpus/mcp_messages/${name}_stdio"
    {
        byte $((15 << 1 | 1))
        printf 'event: endpoint\ndata: /messages?session=1\n\n'
        sed -n 's/^STDOUT: \(.*\)$/event: message\ndata: \1\n/p' "$file"
    } >"$corpus/mcp_messages/${name}_sse"
done

# text_calls: every format the parser knows.
lines text_calls format <<'CASES'
Let me look.\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>
<function=grep><parameter=pattern>fn main<parameter=path>src</function>
<function=bash>ls -la</function>
<function_calls><invoke name="read_file"><parameter name="path">a.txt</parameter></invoke></function_calls>
<｜DSML｜function_calls><｜DSML｜invoke name="read_file"><｜DSML｜parameter name="path">a.txt</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>
<tool_call>{"name": "glob", "arguments": {"pattern": "**/*.rs"}}</tool_call>
```json\n[{"function": {"name": "list_dir", "arguments": "{\\"path\\": \\"src\\"}"}}]\n```
<think>I should read it.</think>\nReading.\n<function=read_file><parameter=path>a</parameter><parameter=limit>10</parameter></function>
CASES

# edit_match: bit 0 replace_all; then text\0old\0new.
seed edit_match exact 0 'fn a() {}\nfn b() {}\nfn a() {}\n\0fn b() {}\0fn bee() {}'
seed edit_match replace_all 1 'fn a() {}\nfn b() {}\nfn a() {}\n\0fn a() {}\0x'
seed edit_match crlf 0 'one\r\ntwo\r\nthree\r\n\0two\nthree\0TWO\nTHREE'
seed edit_match indentation 0 'fn main() {\n    if x {  \n        go();\n    }\n}\n\0if x {\n    go();\n}\0if y {\n    stop();\n}'

# apply_hunks: a bit mask of the hunks to apply; then old\0new.
seed apply_hunks three_hunks 5 \
    "$(for i in $(seq 30); do printf 'line %s\\n' "$i"; done)\\0$(for i in $(seq 30); do
        case $i in 2) printf 'line two\\n' ;; 15) printf 'line fifteen\\nextra\\n' ;; 28) ;; *) printf 'line %s\\n' "$i" ;; esac
    done)"
seed apply_hunks crlf_no_final_newline 1 'a\r\nb\r\nc\0a\r\nB\r\nc'

# command_policy: commands the deny rule `rm -rf` must catch, or must ask about.
lines command_policy command <<'CASES'
git status && rm -rf x
FOO=1 env rm -rf x
echo $(rm -rf x)
ls | bash -c 'rm -rf /'
cat <<EOF\nrm -rf x\nEOF
for f in *; do /bin/rm -fr $f; done
sudo -u root /usr/bin/rm -Rf -r --force x
rm --rec --forc X
exec -a ls rm -rf X
find . -name '*.o' -exec rm -rf {} \\;
R=rm; $R -rf x
alias x=rm; x -rf y
echo hi > notes.txt
git push origin +main
CASES

# task_file: the file's text, in both styles.
lines task_file file <<'CASES'
---\nid: T-2\nstatus: pending\n---\n# Add a login page\n\nUse the form kit.\n
# Fix the notes\n\n- **ID:** TASK-001\n- **Status:** pending\n\nThe notes lose their last line.\n
# Plain\r\n\r\nNothing else.\r\n
\xef\xbb\xbf---\nstatus: >\n  in\n  progress\nmeta:\n  status: x\n---\n# Bom
CASES

# front_matter: bit 0 front matter required; then file\0arguments.
seed front_matter skill 1 '---\nname: pdf\ndescription: >\n  Read PDFs\n  and forms\n---\n\n# PDF\nbody\n\0'
seed front_matter command 0 '---\ndescription: Review a file\nargument-hint: [file] [focus]\n---\nReview $1 for $2. All: $ARGUMENTS. Keep \\$1.\0src/main.rs "error handling"'
seed front_matter anchors 0 '---\na: &x [1, 2]\nb: *x\nc: {d: [e, {f: g}]}\n---\nbody $ARGUMENTS\0x y'

echo "seeded: $(find "$corpus" -type f | wc -l) files in $corpus"
