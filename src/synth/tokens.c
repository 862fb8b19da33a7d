/* tokens.c — the synth token vocabulary: node type x operator class x collective type x group
 * role (docs/synth.md "Tokens"), operator classes from node names (the names themselves never
 * reach a model file), and the per-token attribute bins. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "synth_internal.h"

static const char *op_names[ETK_SYNTH_N_OPS] = {"gemm", "attention", "norm", "elementwise", "embedding",
                                                "loss", "optimizer", "memory", "other"};
static const char *role_names[ETK_SYNTH_N_ROLES] = {"world", "inner", "outer"};
static const char *peer_names[2] = {"next", "prev"};

const char *etk_synth_op_name(int op) { return op >= 0 && op < ETK_SYNTH_N_OPS ? op_names[op] : "other"; }

int etk_synth_tok_comp(int op) { return op >= 0 && op < ETK_SYNTH_N_OPS ? op : ETK_SYNTH_OP_OTHER; }
int etk_synth_tok_coll(int ct, int role)
{
    if (ct < 0 || ct >= ETK_COLL_TYPE_COUNT)
        ct = ETK_COLL_ALL_REDUCE;
    if (role < 0 || role >= ETK_SYNTH_N_ROLES)
        role = ETK_SYNTH_ROLE_WORLD;
    return ETK_SYNTH_TOK_COLL0 + ct * ETK_SYNTH_N_ROLES + role;
}
int etk_synth_tok_p2p(bool send, int peer)
{
    return (send ? ETK_SYNTH_TOK_SEND0 : ETK_SYNTH_TOK_RECV0) + (peer == ETK_SYNTH_PEER_PREV);
}
int etk_synth_tok_type(int tok)
{
    if (tok < ETK_SYNTH_TOK_COLL0)
        return ETK_NODE_COMP;
    if (tok < ETK_SYNTH_TOK_SEND0)
        return ETK_NODE_COLL;
    return tok < ETK_SYNTH_TOK_RECV0 ? ETK_NODE_SEND : ETK_NODE_RECV;
}
int etk_synth_tok_coll_type(int tok)
{
    return etk_synth_tok_type(tok) == ETK_NODE_COLL ? (tok - ETK_SYNTH_TOK_COLL0) / ETK_SYNTH_N_ROLES : -1;
}
int etk_synth_tok_role(int tok)
{
    switch (etk_synth_tok_type(tok)) {
    case ETK_NODE_COLL: return (tok - ETK_SYNTH_TOK_COLL0) % ETK_SYNTH_N_ROLES;
    case ETK_NODE_SEND: return tok - ETK_SYNTH_TOK_SEND0;
    case ETK_NODE_RECV: return tok - ETK_SYNTH_TOK_RECV0;
    default: return -1;
    }
}

const char *etk_synth_tok_name(int tok)
{
    static char names[ETK_SYNTH_N_TOKENS][48];
    static int ready;
    if (!ready) { /* filled once; the strings are constant afterwards */
        for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++) {
            int ty = etk_synth_tok_type(t);
            if (ty == ETK_NODE_COMP)
                snprintf(names[t], sizeof names[t], "COMP:%s", op_names[t]);
            else if (ty == ETK_NODE_COLL)
                snprintf(names[t], sizeof names[t], "COLL:%s:%s", etk_coll_type_name(etk_synth_tok_coll_type(t)),
                         role_names[etk_synth_tok_role(t)]);
            else
                snprintf(names[t], sizeof names[t], "%s:%s", ty == ETK_NODE_SEND ? "SEND" : "RECV",
                         peer_names[etk_synth_tok_role(t)]);
        }
        ready = 1;
    }
    return tok >= 0 && tok < ETK_SYNTH_N_TOKENS ? names[tok] : "UNKNOWN";
}

int etk_synth_tok_parse(const char *name)
{
    for (int t = 0; t < ETK_SYNTH_N_TOKENS; t++)
        if (!strcmp(name, etk_synth_tok_name(t)))
            return t;
    return -1;
}

/* whole-word-ish suffix test on the last dotted component */
static int has(const char *s, const char *w) { return strstr(s, w) != NULL; }

/* a name component (the pieces between '.', '/', '_', ':', '-', ' ') equal to w, or w followed by
 * digits only when digits is set ("ln1", "ln2" for w "ln") */
static int has_part(const char *s, const char *w, bool digits)
{
    size_t lw = strlen(w);
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "./_:- ");
        if (n >= lw && !strncmp(p, w, lw)) {
            size_t k = lw;
            while (digits && k < n && isdigit((unsigned char)p[k]))
                k++;
            if (k == n)
                return 1;
        }
        p += n;
        if (*p)
            p++;
    }
    return 0;
}

int etk_synth_op_class(const char *name, const char *op_kind)
{
    char b[256];
    size_t k = 0;
    for (const char *p = name ? name : ""; *p && k + 1 < sizeof b; p++)
        b[k++] = (char)tolower((unsigned char)*p);
    b[k] = 0;
    if (op_kind && !strcmp(op_kind, "attention"))
        return ETK_SYNTH_OP_ATTENTION;
    /* norms: "norm" anywhere, and GPT-style LayerNorm names (ln1, ln2, ln_f: a component "ln" or
     * "ln" and digits) */
    if (has(b, "norm") || has_part(b, "ln", true))
        return ETK_SYNTH_OP_NORM;
    /* dropout and Megatron's fused bias-dropout-add (attn_bda, ffn_bda, emb_drop, attn_drop) are
     * elementwise, whatever block they sit in */
    if (has(b, "drop") || has_part(b, "bda", false))
        return ETK_SYNTH_OP_ELEMENTWISE;
    if (has(b, "embed"))
        return ETK_SYNTH_OP_EMBEDDING;
    if (has(b, "loss") || has(b, "cross_entropy") || has(b, "nll"))
        return ETK_SYNTH_OP_LOSS;
    if (has(b, "optim") || has(b, "adam") || has(b, "sgd") || has(b, "zero_grad"))
        return ETK_SYNTH_OP_OPTIMIZER;
    /* a projection in an attention block is a GEMM ("self_attn.q_proj", "attn.out_proj",
     * "attention.dense", "self_attn.linear_q"): before s26 the "attn" rule below took them */
    if (has_part(b, "proj", false) || has_part(b, "dense", false) || has(b, "linear"))
        return ETK_SYNTH_OP_GEMM;
    if ((has(b, "attn") && !has(b, "_res")) || has(b, "softmax") || has(b, "sdpa") || has(b, "scaled_dot") ||
        has(b, "attention") || has(b, ".qk") || has(b, ".pv") || has_part(b, "scores", false) ||
        has_part(b, "av", false))
        return ETK_SYNTH_OP_ATTENTION;
    if (has(b, "copy") || has(b, "cast") || has(b, "clone") || has(b, "contiguous") || has(b, "split") ||
        has(b, "chunk") || has(b, "narrow") || has(b, "slice") || has(b, "expand") || has(b, "memcpy") || has(b, "memset") || has(b, "to_copy") ||
        has(b, "empty") || has(b, "cat") || has(b, "view") || has(b, "reshape") || has(b, "transpose"))
        return ETK_SYNTH_OP_MEMORY;
    /* "proj" and "dense" as name components: q_proj, out_proj, c_proj, dense_h_to_4h */
    if (has(b, "mm") || has(b, "gemm") || has(b, "matmul") || has(b, "linear") || has(b, "conv") ||
        has(b, "grad") || has(b, "head") || has_part(b, "proj", false) || has_part(b, "dense", false))
        return ETK_SYNTH_OP_GEMM;
    /* the generator's GEMM names: the whole last component after '.' or '/' ("mb0.L1.q",
     * "decode1/q", "fc1"), the name alone or followed by digits only: anchored, so that "kiln" or
     * "value_x" are not read as the GEMMs k and v (before s25 the names were matched as
     * prefixes) */
    const char *last = b;
    for (const char *p = b; *p; p++)
        if (*p == '.' || *p == '/')
            last = p + 1;
    static const char *gemms[] = {"q", "k", "v", "qkv", "proj", "gate", "up", "down", "fc", "out",
                                  "dense", "router", "wq", "wkv", "kv_a", "kv_b", "q_a", "q_b", "expert"};
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        size_t n = strlen(gemms[i]);
        if (!strncmp(last, gemms[i], n)) {
            while (isdigit((unsigned char)last[n]))
                n++;
            if (!last[n])
                return ETK_SYNTH_OP_GEMM;
        }
    }
    if (has(b, "res") || has(b, "add") || has(b, "mul") || has(b, "rope") || has(b, "swiglu") || has(b, "gelu") ||
        has(b, "relu") || has(b, "silu") || has(b, "act") || has(b, "dropout") || has(b, "bias") || has(b, "scale") ||
        has(b, "div") || has(b, "sub") || has(b, "exp") || has(b, "tanh") || has(b, "sigmoid"))
        return ETK_SYNTH_OP_ELEMENTWISE;
    return ETK_SYNTH_OP_OTHER;
}

bool etk_synth_tok_has_attr(int tok, int a)
{
    if (a == ETK_SYNTH_A_DUR)
        return true;
    bool comp = etk_synth_tok_type(tok) == ETK_NODE_COMP;
    return comp ? a != ETK_SYNTH_A_COMM : a == ETK_SYNTH_A_COMM;
}

/* Bin of v among the quantile edges e[0..B] (B + 1 codes): k = the last edge <= v. A value equal
 * to an edge repeated in e (a point mass: many training values equal) gets the bin of the edge's
 * first occurrence, which stands for exactly that value; any other value gets bin k, the range
 * [e[k], e[k + 1]). */
static uint32_t bin_of(const double *e, double v)
{
    int k = 0;
    for (int j = 1; j <= ETK_SYNTH_N_BINS; j++)
        if (e[j] <= v)
            k = j;
    if (v == e[k])
        while (k > 0 && e[k - 1] == v)
            k--;
    return (uint32_t)k;
}

uint32_t syn_bin_code(const etk_synth_model *m, int tok, const double *val)
{
    uint32_t code = 0;
    for (int a = 0; a < ETK_SYNTH_N_ATTR; a++)
        code = code * SYN_BIN_CODES + (etk_synth_tok_has_attr(tok, a) ? bin_of(m->edges[tok][a], val[a]) : 0);
    return code;
}

void syn_bin_values(const etk_synth_model *m, int tok, uint32_t code, srng *r, double *val)
{
    for (int a = ETK_SYNTH_N_ATTR - 1; a >= 0; a--) {
        uint32_t b = code % SYN_BIN_CODES;
        code /= SYN_BIN_CODES;
        if (!etk_synth_tok_has_attr(tok, a)) {
            val[a] = 0;
            continue;
        }
        const double *e = m->edges[tok][a];
        double lo = e[b], v = lo;
        /* a range bin [e[b], e[b + 1]): log-uniform inside (uniform from 0); a point bin (the
         * edge repeated, or the top edge): the value itself */
        if (b < ETK_SYNTH_N_BINS && e[b + 1] > lo) {
            double hi = e[b + 1], u = srng_unit(r);
            v = lo >= 1 ? exp(log(lo) + u * (log(hi) - log(lo))) : lo + u * (hi - lo);
        }
        val[a] = floor(v + 0.5);
    }
}
