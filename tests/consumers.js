#!/usr/bin/env node
// Opens pystrobe's files with the importers real users open them with, and
// prints what those importers made of them, for tests/live/check_consumers.c
// to hold against what was written.
//
//   node consumers.js speedscope FILE     speedscope's own importer
//   node consumers.js pprof-format FILE   the pprof-format package's decoder
//
// The npm packages live outside the source tree, in $PYSTROBE_NPM_DIR
// (default /var/cache/pystrobe/npm), where tests/install-deps.sh puts them.
//
// speedscope: the package ships its web app as one bundle whose importer is
// the one the app runs on a dropped file (the CLI hands files to it the
// same way).  The bundle is run in a bare VM context, exposing the lazily
// loaded import module where the app's importProfileGroupFromText calls
// it; the app itself then stops at its first use of the DOM, after the
// importer is loaded.
//
// Output is lines, for a C test to read:
//   warning TEXT            speedscope: a console.warn/error while importing
//   profile NAME UNIT       speedscope: each profile it made
//   stack WEIGHT\tA;B;C     the time (speedscope: from the profile's own
//                           calls, forEachCall) or value[0] (pprof) of the
//                           stack, outermost frame first
//   sample_type TYPE/UNIT   pprof-format: the sample types, and
//   default TYPE            the default one, mapping FILE, label KEY (each
//   mapping FILE            key any sample has), unnamed ID (a function
//   label KEY               without a name)
//   unnamed ID
// Exit status 2 when a package is missing (the test SKIPs), 1 on a failure.
'use strict';

const fs = require('fs');
const path = require('path');
const vm = require('vm');
const zlib = require('zlib');

const npmDir = process.env.PYSTROBE_NPM_DIR || '/var/cache/pystrobe/npm';
const modules = path.join(npmDir, 'node_modules');

function missing(what) {
	console.error(`consumers: MISSING ${what} (in ${modules}; see tests/install-deps.sh)`);
	process.exit(2);
}

function fail(msg) {
	console.error('consumers: FAIL: ' + msg);
	process.exit(1);
}

// The speedscope bundle's import module, a promise.
function speedscopeImporter() {
	const dir = path.join(modules, 'speedscope', 'dist', 'release');
	let bundle;

	try {
		bundle = fs.readdirSync(dir).find(f => /^speedscope-.*\.js$/.test(f));
	} catch (e) {
		missing('npm package speedscope');
	}
	if (!bundle)
		missing('speedscope bundle in ' + dir);
	let src = fs.readFileSync(path.join(dir, bundle), 'utf8');
	// async function F(t,e){return(await M).importProfileGroupFromText(t,e)}
	const call = /async function [\w$]+\([\w$]+,[\w$]+\)\{return\(await ([\w$]+)\)\.importProfileGroupFromText\([\w$]+,[\w$]+\)\}/.exec(src);
	if (!call)
		fail(`${bundle}: no importProfileGroupFromText call (a speedscope this script does not know)`);
	const at = call.index + call[0].length;
	src = src.slice(0, at) + `;globalThis.__pystrobeImporter=${call[1]};` + src.slice(at);

	const warnings = [];
	const quiet = () => {};
	const ctx = {
		console: {
			log: quiet, info: quiet, debug: quiet, time: quiet, timeEnd: quiet,
			warn: (...a) => warnings.push(a.join(' ')),
			error: (...a) => warnings.push('error: ' + a.join(' ')),
		},
		setTimeout, clearTimeout, TextDecoder, TextEncoder, URL, atob, btoa,
		location: { hash: '', search: '', href: 'file:///speedscope', protocol: 'file:', pathname: '/' },
		navigator: { userAgent: 'node', platform: 'Linux' },
	};
	ctx.window = ctx;
	ctx.self = ctx;
	vm.createContext(ctx);
	try {
		vm.runInContext(src, ctx, { filename: bundle });
	} catch (e) {
		// The app's first DOM access, after the importer is set up.
	}
	if (!ctx.__pystrobeImporter)
		fail(`${bundle}: the importer was not reached`);
	return { importer: ctx.__pystrobeImporter, warnings };
}

// Self time per stack ("root;...;leaf") of one speedscope Profile.
function profileStacks(profile) {
	const stacks = {}, open = [];
	let last = 0;
	const add = (v) => {
		if (open.length && v > last) {
			const key = open.join(';');
			stacks[key] = (stacks[key] || 0) + (v - last);
		}
		last = v;
	};
	profile.forEachCall((node, v) => { add(v); open.push(node.frame.name); },
			    (node, v) => { add(v); open.pop(); });
	return stacks;
}

async function speedscope(file) {
	const { importer, warnings } = speedscopeImporter();
	const mod = await importer;
	const bytes = fs.readFileSync(file);
	let group;

	// As the app reads a dropped file: the gzip of a pprof stays bytes.
	if (bytes[0] === 0x1f && bytes[1] === 0x8b)
		group = await mod.importProfilesFromArrayBuffer(path.basename(file),
				bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
	else
		group = await mod.importProfileGroupFromText(path.basename(file),
				bytes.toString('utf8'));
	if (!group)
		fail(`${file}: speedscope could not import it`);
	for (const w of warnings)
		console.log('warning ' + w.replace(/\n/g, ' '));
	for (const p of group.profiles) {
		const stacks = profileStacks(p);

		console.log(`profile ${p.getName()} ${p.getWeightUnit()}`);
		for (const k of Object.keys(stacks))
			console.log(`stack ${stacks[k]}\t${k}`);
	}
}

function pprofFormat(file) {
	let Profile;

	try {
		({ Profile } = require(path.join(modules, 'pprof-format')));
	} catch (e) {
		missing('npm package pprof-format');
	}
	const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(file)));
	const str = (i) => p.stringTable.strings[Number(i)];
	const funcs = new Map(), locs = new Map(), labels = new Set(), stacks = {};

	for (const t of p.sampleType)
		console.log(`sample_type ${str(t.type)}/${str(t.unit)}`);
	console.log(`default ${str(p.defaultSampleType)}`);
	for (const m of p.mapping)
		console.log(`mapping ${str(m.filename)}`);
	for (const f of p.function) {
		funcs.set(Number(f.id), f);
		if (!str(f.name))
			console.log(`unnamed ${f.id}`);
	}
	for (const l of p.location)
		locs.set(Number(l.id), l);
	for (const s of p.sample) {
		const names = [];

		for (const id of s.locationId) {
			const l = locs.get(Number(id));
			if (!l)
				fail(`sample names location ${id}, which does not exist`);
			// A location's lines are innermost first, like the sample's.
			for (const line of l.line) {
				const f = funcs.get(Number(line.functionId));
				if (!f)
					fail(`location ${id} names function ${line.functionId}, which does not exist`);
				names.push(str(f.name));
			}
		}
		for (const lab of s.label)
			labels.add(str(lab.key));
		const key = names.reverse().join(';');
		stacks[key] = (stacks[key] || 0) + Number(s.value[0]);
	}
	for (const k of [...labels].sort())
		console.log(`label ${k}`);
	for (const k of Object.keys(stacks))
		console.log(`stack ${stacks[k]}\t${k}`);
}

const [what, file] = process.argv.slice(2);
if (!file)
	fail('usage: consumers.js speedscope|pprof-format FILE');
if (what === 'speedscope')
	speedscope(file).catch(e => fail(e.stack || String(e)));
else if (what === 'pprof-format')
	pprofFormat(file);
else
	fail('unknown consumer ' + what);
