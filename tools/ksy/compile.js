#!/usr/bin/env node
// Compiles every ksy/*.ksy to each target language into build/ksy/<target>/.
// Exits 1 on the first compile error, so a broken .ksy fails the build.
// Usage: node compile.js [KSY_DIR [OUT_DIR]] (the defaults are the repository's).
"use strict";

const fs = require("fs");
const path = require("path");
const yaml = require("js-yaml");
const compiler = require("kaitai-struct-compiler");

const REPO = path.resolve(__dirname, "..", "..");
const KSY_DIR = path.resolve(process.argv[2] || path.join(REPO, "ksy"));
const OUT_DIR = path.resolve(process.argv[3] || path.join(REPO, "build", "ksy"));
const TARGETS = ["python", "javascript", "java", "go", "cpp_stl"];
// The JS compiler has no --go-package option and emits Go files without a
// package clause; add one so build/ksy/go is a buildable package.
const GO_PACKAGE = "binlogksy";

function loadKsy(file) {
  return yaml.load(fs.readFileSync(file, "utf8"));
}

// Resolves `meta/imports` entries relative to ksy/ (the JS compiler reads no files itself).
const importer = {
  importYaml(name) {
    return Promise.resolve(loadKsy(path.join(KSY_DIR, `${name}.ksy`)));
  },
};

function withGoPackage(code) {
  if (/^package /m.test(code)) {
    return code;
  }
  // Go wants the "Code generated" comment before the package clause.
  return code.replace(/^(\/\/ Code generated[^\n]*\n)/, `$1\npackage ${GO_PACKAGE}\n`);
}

function problemText(error) {
  return error && error.message ? error.message : String(error);
}

async function main() {
  const sources = fs.readdirSync(KSY_DIR).filter((name) => name.endsWith(".ksy")).sort();
  if (sources.length === 0) {
    throw new Error(`no .ksy files in ${KSY_DIR}`);
  }
  for (const target of TARGETS) {
    // Start clean so files of a renamed or deleted .ksy do not linger.
    const targetDir = path.join(OUT_DIR, target);
    fs.rmSync(targetDir, { recursive: true, force: true });
    fs.mkdirSync(targetDir, { recursive: true });
    for (const source of sources) {
      let files;
      try {
        files = await compiler.compile(target, loadKsy(path.join(KSY_DIR, source)), importer, false);
      } catch (error) {
        throw new Error(`${source} -> ${target}: ${problemText(error)}`);
      }
      for (const [name, code] of Object.entries(files)) {
        const out = path.join(targetDir, name);
        fs.mkdirSync(path.dirname(out), { recursive: true });
        fs.writeFileSync(out, target === "go" ? withGoPackage(code) : code);
      }
    }
  }
  console.log(`kaitai-struct-compiler ${compiler.version}: ${sources.length} .ksy -> ${TARGETS.join(", ")} in ${path.relative(REPO, OUT_DIR)}/`);
}

main().catch((error) => {
  console.error(`compile.js: ${error.message}`);
  process.exit(1);
});
