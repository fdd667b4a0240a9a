/*
 * binlog_skeleton.c: a minimal BinLog conformance testee in C11, to copy when you write
 * BinLog (spec/) in a new language. It speaks the suite's session protocol
 * (spec/conformance.md section 3.4) and reads version 2 logs from their start with the
 * checks of a *minimal reader* (spec section 14). C library, POSIX dirent and stat only.
 *
 *   binlog-skeleton session    JSON lines on stdin/stdout (what `binlog conformance run` starts)
 *   binlog-skeleton read DIR   one read; the answer on stdout; exit 0 accept, 2 recovered, 1 reject
 *
 * NOT done (look for TODO): legacy version 1 (Appendix B), the tail walk of a finished
 * segment that is not sealed (section 8.4; it declares the allowed choice "commit_point"
 * instead), refs (10.6), tolerant reads (10.4), splits (10.5), compressed segments
 * (2.6), following a live log (10.3), writing and recovery (sections 6 to 9). It loads
 * each segment file whole: memory stays bounded by the file size, but a real
 * reader reads as it goes.
 */
#define _POSIX_C_SOURCE 200809L /* opendir/readdir and stat under -std=c11 */

#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Checksums: masked CRC32C (spec section 5) ------------------------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1; /* Castagnoli, reflected */
        crc_table[i] = c;
    }
}

/* The raw CRC register: callers start at 0xFFFFFFFF and invert at the end, so that the
   segment header checksum can run over its three pieces in a row (section 3.1). */
static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t n)
{
    while (n--)
        c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

/* LevelDB's mask (rotate right 15, add a constant): zeros never pass as a checksum. */
static uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

static uint32_t masked_crc(const uint8_t *p, size_t n) { return mask(~crc_update(0xFFFFFFFFu, p, n)); }

/* ---- Bytes: every integer is big-endian (section 1.3) ------------------------------- */

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    while (n--)
        v = v << 8 | *p++;
    return v;
}

/* s8 (asqn, timestamps): two's complement, without an implementation-defined cast. */
static int64_t s64(uint64_t u) { return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1; }

static int all_zero(const uint8_t *p, uint64_t n)
{
    while (n--)
        if (*p++)
            return 0;
    return 1;
}

/* ---- Errors: a class of spec section 12 with its log, offset and index -------------- */

static char error[200]; /* the error object of the last failure, as JSON */

#define V(x) (&(uint64_t){(x)}) /* a number for fail(); NULL stands for JSON null */

/* Log number 0 is never used (section 2.2), so 0 stands for null; offsets and indexes
   are decimal strings (conformance 3.1). Returns -1 for `return fail(...)`. */
static int fail(const char *cls, uint32_t log, const uint64_t *offset, const uint64_t *index)
{
    char l[12] = "null", o[24] = "null", i[24] = "null";
    if (log)
        snprintf(l, sizeof l, "%" PRIu32, log);
    if (offset)
        snprintf(o, sizeof o, "\"%" PRIu64 "\"", *offset);
    if (index)
        snprintf(i, sizeof i, "\"%" PRIu64 "\"", *index);
    snprintf(error, sizeof error, "{\"class\": \"%s\", \"log\": %s, \"offset\": %s, \"index\": %s}", cls, l, o, i);
    return -1;
}

/* ---- Output: the canonical objects (spec/conformance.md section 3.1) ---------------- */

static int nrecords; /* records written so far in the current answer */

/* The read answer is streamed: records as the walk returns them, the outcome last (JSON
   member order does not matter, conformance 5.1), so no record is held in memory. */
static void put_record(uint32_t log, uint64_t offset, const uint8_t *r, uint64_t length)
{
    static const char hex[] = "0123456789abcdef";
    printf("%s{\"log\": %" PRIu32 ", \"offset\": \"%" PRIu64 "\", \"index\": \"%" PRIu64 "\", \"asqn\": \"%" PRId64
           "\", \"timestamp_us\": \"%" PRId64 "\", \"payload\": \"",
           nrecords++ ? ", " : "", log, offset, be(r + 8, 8), s64(be(r + 16, 8)), s64(be(r + 24, 8)));
    for (uint64_t i = 40; i < 4 + length; i++) {
        putchar(hex[r[i] >> 4]);
        putchar(hex[r[i] & 15]);
    }
    fputs("\", \"checked\": true}", stdout);
}

static void put_unsupported(const char *detail)
{
    printf("{\"ok\": false, \"error\": {\"class\": \"unsupported_operation\", \"log\": null, \"offset\": null,"
           " \"index\": null, \"detail\": \"%s\"}}", detail);
}

/* ---- The directory (spec section 2) -------------------------------------------------- */

struct entry { /* a segment number the listing shows */
    uint32_t num;
    int plain; /* 0 when only NNNNNNNN.dat.gz or .dat.zst exists */
};

static int by_number(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return x->num != y->num ? (x->num < y->num ? -1 : 1) : y->plain - x->plain; /* plain first */
}

/* exactly eight ASCII digits, not all zero, and ".dat" (or ".dat.gz", ".dat.zst"); nothing else. */
static int segment_name(const char *name, struct entry *e)
{
    e->num = 0;
    for (int i = 0; i < 8; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        e->num = e->num * 10 + (uint32_t)(name[i] - '0');
    }
    if (e->num == 0) /* log number 0 is never used (section 2.2): 00000000.dat is not a segment */
        return 0;
    e->plain = strcmp(name + 8, ".dat") == 0;
    return e->plain || strcmp(name + 8, ".dat.gz") == 0 || strcmp(name + 8, ".dat.zst") == 0;
}

/* The segments sorted by number, one entry each, and whether LOCK exists. */
static int list_dir(const char *dir, struct entry **out, size_t *count, int *has_lock)
{
    DIR *d = opendir(dir);
    if (!d) /* missing, or not a directory: not a log (section 2.3) */
        return fail("io_error", 0, NULL, NULL);
    struct entry *list = malloc(16 * sizeof *list), *bigger, e;
    size_t n = 0, cap = 16;
    struct dirent *de;
    while (list && (de = readdir(d)) != NULL) {
        *has_lock |= strcmp(de->d_name, "LOCK") == 0;
        if (!segment_name(de->d_name, &e))
            continue; /* temporary files, .idx, subscribers/, anything else: ignored */
        if (n == cap) {
            if (!(bigger = realloc(list, (cap *= 2) * sizeof *list)))
                free(list); /* out of memory */
            list = bigger;
        }
        if (list)
            list[n++] = e;
    }
    closedir(d);
    if (!list)
        return fail("io_error", 0, NULL, NULL);
    qsort(list, n, sizeof *list, by_number);
    *count = 0;
    for (size_t i = 0; i < n; i++) /* a plain file and its compressed copy: the plain one */
        if (*count == 0 || list[*count - 1].num != list[i].num)
            list[(*count)++] = list[i];
    *out = list;
    return 0;
}

/* ---- Segments: header, commit slots, records (spec sections 3 and 4) ---------------- */

struct segment {
    uint32_t num;  /* log number, from the file name (section 2.2) */
    uint8_t *b;    /* the whole file */
    uint64_t F;    /* file size */
    uint64_t base; /* base_index (header offset 48) */
    uint64_t C;    /* commit point: the active slot's commit_offset (section 3.2) */
    uint64_t next; /* the active slot's next_index */
    uint64_t slot; /* the active slot's offset, 96 or 144 */
};

/* OPEN(N) of section 10.2.2, reduced to reading the plain file whole. */
static int load(const char *dir, const struct entry *e, struct segment *s)
{
    memset(s, 0, sizeof *s);
    s->num = e->num;
    if (!e->plain) /* TODO spec 2.6: unpack gzip/zstd. A reader that does not MUST say so (2.7). */
        return fail("unsupported_feature", e->num, NULL, NULL);
    size_t size = strlen(dir) + 16;
    char *path = malloc(size);
    struct stat st;
    FILE *f = NULL;
    if (path)
        snprintf(path, size, "%s/%08" PRIu32 ".dat", dir, e->num);
    int ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode); /* a directory cannot be read */
    if (ok) {
        s->F = (uint64_t)st.st_size;
        ok = (s->b = malloc(s->F ? s->F : 1)) && (f = fopen(path, "rb")) && fread(s->b, 1, s->F, f) == s->F;
    }
    if (f)
        fclose(f);
    free(path);
    /* a failed open, stat or read is io_error, never "truncated" or the end of the log. */
    return ok ? 0 : fail("io_error", e->num, NULL, NULL);
}

/* Section 1.4: blank = at most 256 bytes, every one zero. Only the highest-numbered
   segment can be a blank last segment, which is absent (R-7, section 3.5). */
static int blank(const struct segment *s) { return s->F <= 256 && all_zero(s->b, s->F); }

/* The active slot: section 3.2, steps 1 to 8. */
static int choose_slot(struct segment *s)
{
    const uint8_t *slot[2] = {s->b + 96, s->b + 144};
    uint64_t gen[2];
    int valid[2];
    for (int i = 0; i < 2; i++) { /* step 1; generation 0 means never written */
        gen[i] = be(slot[i], 8);
        valid[i] = gen[i] != 0 && be(slot[i] + 44, 4) == masked_crc(slot[i], 44);
    }
    if (!valid[0] && !valid[1]) return fail("bad_header", s->num, V(96), NULL);             /* step 2 */
    if (valid[0] && valid[1] && gen[0] == gen[1]) return fail("bad_header", s->num, V(96), NULL); /* 3 */
    int a = !valid[0] ? 1 : !valid[1] ? 0 : gen[1] > gen[0]; /* step 4: the higher generation */
    /* Steps 5 to 8 report at the slot where the generation belongs, and never fall back to
       the other slot: a valid checksum over impossible contents is corruption. */
    uint64_t home = 96 + 48 * (gen[a] % 2), next_log = be(slot[a] + 40, 4);
    s->C = be(slot[a] + 8, 8);
    s->next = be(slot[a] + 16, 8);
    s->slot = home;
    if (home != 96 + 48 * (uint64_t)a) return fail("bad_header", s->num, V(home), NULL);     /* step 5 */
    if (s->C < 256 || s->next < s->base) return fail("bad_header", s->num, V(home), NULL);   /* step 6 */
    if (next_log != 0 && next_log != (uint64_t)s->num + 1)                                  /* step 7 */
        return fail("bad_header", s->num, V(home), NULL);
    if (s64(be(slot[a] + 24, 8)) < -1) return fail("bad_header", s->num, V(home), NULL);    /* step 8 */
    return 0;
}

/* The header check order of section 3.4: the first failing step gives the class. */
static int check_header(struct segment *s)
{
    static const uint8_t signature[8] = {0x89, 'B', 'L', 'O', 'G', 0x0d, 0x0a, 0x1a};
    const uint8_t *h = s->b;
    const uint32_t n = s->num;
    if (s->F < 256) return fail("truncated", n, V(0), NULL);                                /* step 1 */
    /* Step 2: version 1 without the signature is legacy jPOS-EE. A minimal reader reports
       it as unsupported_version at offset 4 (section 14), which step 3 does.
       TODO spec Appendix B.3, B.4: read version 1 (capability legacy_v1). */
    if (be(h + 4, 2) != 2) return fail("unsupported_version", n, V(4), NULL);               /* step 3 */
    if (memcmp(h + 24, signature, 8) != 0) return fail("bad_signature", n, V(24), NULL);    /* step 4 */
    uint32_t c = crc_update(crc_update(crc_update(0xFFFFFFFFu, h, 6), h + 16, 4), h + 24, 68);
    if (be(h + 92, 4) != mask(~c)) return fail("bad_header", n, V(92), NULL);               /* step 5 */
    if (be(h, 4) != 252) return fail("bad_header", n, V(0), NULL);                          /* step 6 */
    if (be(h + 16, 4) != n) return fail("bad_header", n, V(16), NULL);                      /* step 7 */
    uint64_t flags = be(h + 64, 4); /* flags before reserved bytes: a later revision is unsupported_feature */
    if (flags & ~(uint64_t)1) return fail("unsupported_feature", n, V(64), NULL);           /* step 8 */
    if (!all_zero(h + 68, 4) || !all_zero(h + 80, 12) || !all_zero(h + 192, 64))            /* step 9 */
        return fail("bad_header", n, V(68), NULL); /* one offset for all three areas */
    if ((int)(flags & 1) != (be(h + 72, 8) != 0)) return fail("bad_header", n, V(72), NULL); /* 10 */
    s->base = be(h + 48, 8);
    return choose_slot(s);                                                                  /* step 11 */
}

/* WALK and RECORD of section 10.2.2: the committed records from offset 256 to the commit
   point C, each checked by steps 1 to 8 of section 4.3.1 in order. A minimal
   reader's segment end S is C (section 14), so every record's bound U is C. E (the
   expected index) and A (the previous asqn) carry over between segments. Damage
   is reported with log, offset o and E after the records before it. */
static int walk(const struct segment *s, uint64_t *E, int64_t *A)
{
    const uint64_t C = s->C, F = s->F, B = C < F ? C : F;
    const uint32_t n = s->num;
    for (uint64_t o = 256; o != C;) { /* o < C: step 4 keeps every record inside C */
        const uint8_t *r = s->b + o;
        if (o + 40 > B) return fail("truncated", n, V(o), V(*E));                                    /* 1 */
        uint64_t length = be(r, 4), end = o + 4 + length; /* not to be trusted before step 2 */
        int64_t asqn = s64(be(r + 16, 8));
        if (be(r + 36, 4) != masked_crc(r, 36)) return fail("checksum_mismatch", n, V(o), V(*E));    /* 2 */
        if (!(r[4] == 1 || r[4] >= 128) || r[5] || r[6] || r[7])                                     /* 3 */
            return fail("unsupported_feature", n, V(o), V(*E)); /* frame 0 or 2..127, flags, reserved */
        if (length < 36 || length > 0x7FFFFFFF || end > C)                                           /* 4 */
            return fail("length_out_of_range", n, V(o), V(*E)); /* the bound U before the file F */
        if (end > F) return fail("truncated", n, V(o), V(*E));                                       /* 5 */
        if (be(r + 32, 4) != masked_crc(r + 40, length - 36))                                        /* 6 */
            return fail("checksum_mismatch", n, V(o), V(*E));
        if (be(r + 8, 8) != *E) return fail("index_discontinuity", n, V(o), V(*E));                  /* 7 */
        if (asqn != -1 && (asqn < 0 || asqn <= *A)) return fail("asqn_not_increasing", n, V(o), V(*E)); /* 8 */
        if (r[4] == 1) { /* a data record; frames 128..255 are verified and skipped */
            put_record(n, o, r, length);
            *E += 1;
            if (asqn != -1)
                *A = asqn;
        }
        o = end;
    }
    return 0;
}

/* ---- Reading a log (spec section 10.2) ---------------------------------------------- */

enum { ACCEPT = 0, REJECT = 1, RECOVERED = 2 }; /* also the exit codes of `read` */

/* READ-LOG of section 10.2.2 for a minimal reader. A reject leaves its error object in
   `error`; a recovered answer gives its torn object in *torn_log and *torn_offset. */
static int read_log(const char *dir, uint32_t *torn_log, uint64_t *torn_offset)
{
    struct entry *list = NULL;
    size_t n = 0;
    int has_lock = 0, outcome = REJECT;
    struct segment cur = {0}, next = {0};
    if (list_dir(dir, &list, &n, &has_lock) != 0)
        return REJECT;
    if (n == 0) { /* an empty log; without LOCK, a directory that is not a log */
        if (has_lock)
            outcome = ACCEPT;
        else
            fail("io_error", 0, NULL, NULL);
        goto out;
    }
    if (load(dir, &list[0], &cur) != 0)
        goto out;
    if (n == 1 && blank(&cur)) { /* only a blank last segment: an empty log */
        outcome = ACCEPT;
        goto out;
    }
    if (check_header(&cur) != 0)
        goto out;
    uint64_t E = cur.base; /* the lowest segment's base_index, whatever it is */
    int64_t A = -1;
    for (size_t i = 0;; i++) {
        if (walk(&cur, &E, &A) != 0)
            goto out;
        /* END: is N+1 present? Its header is checked before N's check of R-39 (10.2.3). */
        int higher = i + 1 < n; /* the listing shows a segment above N */
        int successor = higher && list[i + 1].num == cur.num + 1;
        if (successor) {
            if (load(dir, &list[i + 1], &next) != 0)
                goto out;
            if (i + 2 == n && blank(&next)) /* a blank last N+1 is absent */
                successor = higher = 0;
            else if (check_header(&next) != 0)
                goto out;
        }
        /* TODO spec 8.4: when N+1 is present and N is not sealed, a full reader walks
           N's tail up to N+1's base_index (choice "tail_walk"). Taking S = C is the choice
           "commit_point" that a minimal reader may make (section 14, conformance 5.4). */
        if (E != cur.next) { /* the walk and the active slot agree on the index at C */
            fail("bad_header", cur.num, V(cur.slot), V(E));
            goto out;
        }
        if (!higher) { /* N is the last segment (section 8.6, first row) */
            /* Non-zero bytes beyond C are a torn tail: never an error, but reported
               as "recovered" at the commit point (conformance 3.1, 3.2). Zeros are not. */
            outcome = all_zero(cur.b + cur.C, cur.F - cur.C) ? ACCEPT : RECOVERED; /* C <= F: walked */
            *torn_log = cur.num;
            *torn_offset = cur.C;
            goto out;
        }
        /* The chain checks of section 8.6. */
        if (!successor) { /* a missing number below the highest: no file, so no offset */
            fail("chain_broken", cur.num + 1, NULL, V(E));
            goto out;
        }
        if (memcmp(cur.b + 32, next.b + 32, 16) != 0 || next.base != E) { /* log id, base index */
            fail("chain_broken", next.num, V(0), V(E));
            goto out;
        }
        free(cur.b); /* NEXT step 5: move to N+1; E and A carry over */
        cur = next;
        next.b = NULL;
    }
out:
    free(cur.b);
    free(next.b);
    free(list);
    return outcome;
}

/* The read answer of conformance section 3.2, with "ok": true for the session. */
static int answer_read(const char *dir)
{
    uint32_t torn_log = 0;
    uint64_t torn_offset = 0;
    nrecords = 0;
    fputs("{\"ok\": true, \"records\": [", stdout);
    int outcome = read_log(dir, &torn_log, &torn_offset);
    if (outcome == ACCEPT)
        fputs("], \"outcome\": \"accept\", \"torn\": null, \"error\": null}", stdout);
    if (outcome == RECOVERED)
        printf("], \"outcome\": \"recovered\", \"torn\": {\"log\": %" PRIu32 ", \"offset\": \"%" PRIu64 "\"},"
               " \"error\": null}", torn_log, torn_offset);
    if (outcome == REJECT)
        printf("], \"outcome\": \"reject\", \"torn\": null, \"error\": %s}", error);
    return outcome;
}

/* ---- Requests: a tiny parser for flat JSON objects (conformance 3.4) ---------------- */

/* Each member's key and, for a string, its decoded value. Other values are only told
   apart as "set" (true, a number, an object, ...) or not (null, false). */
static struct member {
    const char *key, *text; /* text: NULL unless the value is a string */
    int set;
} members[16];
static int nmembers;

#define space(s) ((s) + strspn((s), " \t\r\n")) /* skip JSON white space */

/* Decode the JSON string at s into *out, moving *out past its NUL (out NULL: only skip
   it). Returns the position after the closing quote, or NULL. Decoding never makes a
   string longer than its JSON text, so a buffer as long as the line holds every one. */
static const char *string(const char *s, char **out)
{
    static const char *escapes = "\"\\/bfnrt", *meanings = "\"\\/\b\f\n\r\t";
    char *o = out ? *out : NULL, digits[5] = {0};
    if (*s++ != '"')
        return NULL;
    while (*s != '"') {
        unsigned long c = (unsigned char)*s++;
        if (c == 0 || (c == '\\' && *s == 0))
            return NULL;
        if (c == '\\' && strchr(escapes, *s)) {
            c = (unsigned char)meanings[strchr(escapes, *s++) - escapes];
        } else if (c == '\\') { /* \uXXXX, as Python's json.dumps writes non-ASCII: UTF-8 */
            if (*s != 'u' || strspn(s + 1, "0123456789abcdefABCDEF") < 4)
                return NULL;
            c = strtoul(memcpy(digits, s + 1, 4), NULL, 16); /* TODO: surrogate pairs */
            s += 5;
            if (o && c >= 0x800)
                *o++ = (char)(0xE0 | c >> 12), *o++ = (char)(0x80 | (c >> 6 & 0x3F));
            else if (o && c >= 0x80)
                *o++ = (char)(0xC0 | c >> 6);
            c = c >= 0x80 ? 0x80 | (c & 0x3F) : c;
        }
        if (o)
            *o++ = (char)c;
    }
    if (o)
        *o++ = '\0', *out = o;
    return s + 1;
}

/* Parse the request in s; keys and strings go to store (a buffer as long as s). */
static int parse_request(const char *s, char *store)
{
    nmembers = 0;
    if (*(s = space(s)) != '{')
        return -1;
    if (*(s = space(s + 1)) == '}')
        return 0;
    for (;;) {
        struct member m = {store, NULL, 1};
        if (!(s = string(space(s), &store)) || *(s = space(s)) != ':')
            return -1;
        s = space(s + 1);
        if (*s == '"') {
            m.text = store;
            s = string(s, &store);
        } else { /* skip to the ',' or '}' that ends the value, minding nesting and strings */
            m.set = strncmp(s, "null", 4) != 0 && strncmp(s, "false", 5) != 0;
            for (int depth = 0; s && *s && (depth > 0 || (*s != ',' && *s != '}'));)
                if (*s == '"')
                    s = string(s, NULL);
                else
                    depth += (*s == '{' || *s == '[') - (*s == '}' || *s == ']'), s++;
        }
        if (!s || !*s)
            return -1;
        if (nmembers < 16)
            members[nmembers++] = m;
        if (*(s = space(s)) == '}')
            return 0;
        if (*s++ != ',')
            return -1;
    }
}

/* The string value of the member named key, or NULL. */
static const char *get(const char *key)
{
    for (int i = 0; i < nmembers; i++)
        if (strcmp(members[i].key, key) == 0)
            return members[i].text;
    return NULL;
}

/* A plain read has only "op" and "path". Anything else asks for a capability the hello
   did not declare: "after" (refs, TODO spec 10.6), "tolerant" (TODO 10.4), "log",
   "start", "stop" (a split, TODO 10.5), or an option of a later suite version. */
static int plain_read(void)
{
    for (int i = 0; i < nmembers; i++)
        if (strcmp(members[i].key, "op") != 0 && strcmp(members[i].key, "path") != 0 && members[i].set)
            return 0;
    return 1;
}

/* One line of any length; NULL at the end of input (or when memory runs out). */
static char *read_line(FILE *f)
{
    size_t n = 0, cap = 256;
    char *line = malloc(cap), *bigger;
    int c = EOF;
    while (line && (c = fgetc(f)) != EOF && c != '\n') {
        if (n + 1 == cap) {
            if (!(bigger = realloc(line, cap *= 2)))
                break; /* out of memory: c is neither EOF nor a newline */
            line = bigger;
        }
        line[n++] = (char)c;
    }
    if (line && (c == '\n' || (c == EOF && n > 0)))
        return line[n] = '\0', line;
    free(line);
    return NULL;
}

/* ---- The session (conformance section 3.4) ------------------------------------------ */

/* Answers one request line (without its newline); returns 1 after bye. */
static int answer(const char *line, char *store)
{
    const char *op = NULL;
    if (parse_request(line, store) != 0 || !(op = get("op"))) {
        put_unsupported("not a request this skeleton understands");
    } else if (strcmp(op, "hello") == 0) {
        /* Declare only what is done: no capabilities, and the minimal reader's choice for
           finished segments (spec section 14, conformance 5.4). */
        fputs("{\"ok\": true, \"name\": \"binlog-skeleton\", \"version\": \"0.1.0\", \"spec_version\": \"2.0\","
              " \"roles\": [\"reader\"], \"capabilities\": [],"
              " \"choices\": {\"finished_segment_end\": \"commit_point\"}}", stdout);
    } else if (strcmp(op, "bye") == 0) {
        fputs("{\"ok\": true}", stdout);
        return 1;
    } else if (strcmp(op, "read") != 0) {
        put_unsupported("only hello, read and bye"); /* TODO spec 6 to 9: write, recover */
    } else if (!plain_read()) {
        put_unsupported("only reads from the start: no refs, tolerant reads or splits");
    } else if (!get("path")) {
        put_unsupported("a read needs a path");
    } else {
        answer_read(get("path"));
    }
    return 0;
}

static int session(void)
{
    char *line, *store;
    int bye = 0;
    while (!bye && (line = read_line(stdin)) != NULL) {
        if (*space(line) && (store = malloc(strlen(line) + 1)) != NULL) { /* skip empty lines */
            bye = answer(line, store);
            fputs("\n", stdout);
            fflush(stdout); /* one line per request, flushed: the runner is waiting for it */
            free(store);
        }
        free(line);
    }
    return 0; /* after bye, or at the end of input */
}

int main(int argc, char **argv)
{
    crc_init();
    if (masked_crc((const uint8_t *)"123456789", 9) != 0xC78AB0E5u) { /* test vector TV-2 */
        fputs("binlog-skeleton: the CRC32C self-test failed\n", stderr);
        return 4;
    }
    if (argc == 2 && strcmp(argv[1], "session") == 0)
        return session();
    if (argc == 3 && strcmp(argv[1], "read") == 0) { /* conformance 3.3, without options */
        int outcome = answer_read(argv[2]);
        fputs("\n", stdout);
        return outcome;
    }
    fputs("usage: binlog-skeleton session | read DIR\n", stderr);
    return 4;
}
