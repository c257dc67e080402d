#!/usr/bin/env node
// Opens a pystrobe flame graph in headless Chromium and uses it the way a
// person would: real mouse clicks, hovers and key presses, sent through the
// DevTools protocol, so the test covers hit testing and event handling and
// not only the script's functions.
//
//   node browser_flamegraph.js FILE.svg [--click=LABEL] [--hover=LABEL]
//        [--ic=REGEX=EXPECTED] [--hostile] [--diff] [--screenshot=PNG]
//        [--viewport=WxH] [--resize=WxH] [--first-screen=LABEL]...
//        [--helpers=HELPER,OWN] [REGEX=EXPECTED]...
//
// Each REGEX=EXPECTED is a search (through the Search button, Ctrl-F or "/")
// whose "Matched: ..." text must equal EXPECTED.  --ic searches with the
// "ignore case" checkbox ticked, and checks that it is a labelled checkbox.
// Always: the frames fill the window's width (the widest reaches its right
// edge, less the margin and a scroll bar), and each label is drawn whole
// when it fits its box and cut with an ellipsis only when it does not,
// both measured in the page's font.  --resize: the window then changes to
// WxH, and the frames must fill the new width.  --helpers: the frame
// labelled HELPER is a helper thread, drawn narrow while "narrow helper
// threads" is ticked, OWN one of the program's own that gets its width;
// unticked, both are as wide as their samples, and searches count the
// same either way.  --click zooms into the frame labelled LABEL and
// checks the zoom; --hover checks the details line; --hostile checks that
// the sample profile's hostile function name is there as literal text.
// --diff: the file is a differential flame graph (pystrobe diff), whose
// details line also gives the self and total change, before and after.
// --viewport sets the window (default 1200x800); each --first-screen
// frame must be drawn whole inside it as the file opens, unscrolled, and a
// frame clicked must still be inside it after the zoom.
//
// No npm packages: the WebSocket client below is a minimal RFC 6455 one
// (text frames, fragmentation, ping), since node 20 has none built in.
// Exits 0 when all checks pass, 1 on a failure, 2 when Chromium is missing.
'use strict';

const { spawn, execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const W = 1200, PAD = 10;	// the default window's width; the margin (fg_script.h)
const SCROLLBAR = 20;		// at most, beside the frames

function die(msg) {
	console.error('browser_flamegraph: FAIL: ' + msg);
	cleanup();
	process.exit(1);
}

function ok(msg) {
	console.log('browser_flamegraph: ok - ' + msg);
}

function check(cond, msg) {
	if (!cond)
		die(msg);
	ok(msg);
}

// --- a minimal WebSocket client ------------------------------------------

class WebSocketClient {
	constructor(sock, head) {
		this.sock = sock;
		this.buf = head;
		this.parts = [];
		this.onmessage = () => {};
		this.onclose = () => {};
		sock.setNoDelay(true);
		sock.on('data', (d) => {
			this.buf = Buffer.concat([this.buf, d]);
			this.parse();
		});
		sock.on('close', () => this.onclose());
		sock.on('error', () => this.onclose());
	}

	static connect(url) {
		return new Promise((resolve, reject) => {
			const u = new URL(url);
			const key = crypto.randomBytes(16).toString('base64');
			const req = http.request({
				host: u.hostname, port: u.port, path: u.pathname,
				headers: {
					Connection: 'Upgrade', Upgrade: 'websocket',
					'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13',
				},
			});
			req.on('upgrade', (res, sock, head) => {
				const accept = crypto.createHash('sha1')
					.update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
					.digest('base64');
				if (res.headers['sec-websocket-accept'] !== accept)
					return reject(new Error('bad Sec-WebSocket-Accept'));
				resolve(new WebSocketClient(sock, head));
			});
			req.on('response', (res) => reject(new Error('no upgrade: HTTP ' + res.statusCode)));
			req.on('error', reject);
			req.end();
		});
	}

	// Clients must mask what they send (RFC 6455 5.3).
	frame(opcode, data) {
		const mask = crypto.randomBytes(4);
		let hdr;

		if (data.length < 126) {
			hdr = Buffer.from([0x80 | opcode, 0x80 | data.length]);
		} else if (data.length < 65536) {
			hdr = Buffer.alloc(4);
			hdr.writeUInt16BE(data.length, 2);
			hdr[1] = 0x80 | 126;
		} else {
			hdr = Buffer.alloc(10);
			hdr.writeBigUInt64BE(BigInt(data.length), 2);
			hdr[1] = 0x80 | 127;
		}
		hdr[0] = 0x80 | opcode;
		const body = Buffer.from(data);
		for (let i = 0; i < body.length; i++)
			body[i] ^= mask[i & 3];
		this.sock.write(Buffer.concat([hdr, mask, body]));
	}

	send(text) {
		this.frame(1, Buffer.from(text, 'utf8'));
	}

	parse() {
		for (;;) {
			const b = this.buf;
			if (b.length < 2)
				return;
			let len = b[1] & 0x7f, off = 2;
			if (len === 126) {
				if (b.length < 4)
					return;
				len = b.readUInt16BE(2);
				off = 4;
			} else if (len === 127) {
				if (b.length < 10)
					return;
				len = Number(b.readBigUInt64BE(2));
				off = 10;
			}
			const masked = b[1] & 0x80;
			const mask = masked ? b.subarray(off, off + 4) : null;
			if (masked)
				off += 4;
			if (b.length < off + len)
				return;
			const payload = Buffer.from(b.subarray(off, off + len));
			if (mask)
				for (let i = 0; i < payload.length; i++)
					payload[i] ^= mask[i & 3];
			this.buf = b.subarray(off + len);
			const fin = b[0] & 0x80, op = b[0] & 0x0f;
			if (op === 8) {
				this.sock.end();
				return;
			}
			if (op === 9) {
				this.frame(10, payload);
				continue;
			}
			if (op !== 0 && op !== 1 && op !== 2)
				continue;
			this.parts.push(payload);
			if (fin) {
				const msg = Buffer.concat(this.parts).toString('utf8');
				this.parts = [];
				this.onmessage(msg);
			}
		}
	}
}

// --- the DevTools protocol -------------------------------------------------

class Cdp {
	constructor(ws) {
		this.ws = ws;
		this.next = 1;
		this.pending = new Map();
		this.listeners = [];
		ws.onmessage = (text) => this.receive(JSON.parse(text));
		ws.onclose = () => {
			for (const p of this.pending.values())
				p.reject(new Error(p.method + ': connection closed'));
			this.pending.clear();
		};
	}

	receive(msg) {
		if (msg.id === undefined) {
			for (const l of this.listeners)
				l(msg);
			return;
		}
		const p = this.pending.get(msg.id);
		if (!p)
			return;
		this.pending.delete(msg.id);
		if (msg.error)
			p.reject(new Error(p.method + ': ' + msg.error.message));
		else
			p.resolve(msg.result);
	}

	send(method, params, sessionId) {
		const id = this.next++;
		const msg = { id, method, params: params || {} };
		if (sessionId)
			msg.sessionId = sessionId;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject, method });
			this.ws.send(JSON.stringify(msg));
		});
	}

	waitFor(method, ms) {
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error('timed out waiting for ' + method)), ms);
			const l = (msg) => {
				if (msg.method !== method)
					return;
				clearTimeout(timer);
				this.listeners.splice(this.listeners.indexOf(l), 1);
				resolve(msg.params);
			};
			this.listeners.push(l);
		});
	}
}

// --- Chromium ---------------------------------------------------------------

let chrome = null, profileDir = null;

function cleanup() {
	if (chrome && chrome.exitCode === null && chrome.signalCode === null) {
		try {
			chrome.kill('SIGKILL');
		} catch (e) { /* already gone */ }
	}
	if (profileDir) {
		try {
			fs.rmSync(profileDir, { recursive: true, force: true, maxRetries: 5 });
		} catch (e) {
			console.error('browser_flamegraph: could not remove ' + profileDir + ': ' + e.message);
		}
	}
	profileDir = null;
}

// Let Chromium finish writing its profile directory before it is removed.
function closeChromium(cdp) {
	return new Promise((resolve) => {
		if (!chrome || chrome.exitCode !== null || chrome.signalCode !== null)
			return resolve();
		const timer = setTimeout(resolve, 10000);
		chrome.on('exit', () => {
			clearTimeout(timer);
			resolve();
		});
		cdp.send('Browser.close').catch(() => {});
	});
}

function findChromium() {
	const cands = [process.env.PYSTROBE_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
	for (const c of cands) {
		if (!c)
			continue;
		try {
			fs.accessSync(c, fs.constants.X_OK);
			return c;
		} catch (e) { /* next */ }
	}
	try {
		return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim() || null;
	} catch (e) {
		return null;
	}
}

function startChromium(bin, view) {
	profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pystrobe-chromium-'));
	chrome = spawn(bin, [
		'--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync',
		'--user-data-dir=' + profileDir, '--remote-debugging-port=0',
		'--window-size=' + view.w + ',' + view.h, 'about:blank',
	], { stdio: ['ignore', 'ignore', 'pipe'] });
	return new Promise((resolve, reject) => {
		let err = '';
		const timer = setTimeout(() => reject(new Error('Chromium did not start:\n' + err)), 60000);
		chrome.stderr.on('data', (d) => {
			err += d;
			const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
			if (m) {
				clearTimeout(timer);
				resolve(m[1]);
			}
		});
		chrome.on('exit', (code) => reject(new Error('Chromium exited (' + code + '):\n' + err)));
	});
}

// --- the test -------------------------------------------------------------

function parseArgs(argv) {
	const a = { file: null, searches: [], ic: null, click: null, hover: null, screenshot: null,
		hostile: false, diff: false, view: { w: W, h: 800 }, firstScreen: [], resize: null,
		helpers: null };
	const spec = (s) => {
		const i = s.lastIndexOf('=');
		if (i <= 0)
			die('bad search ' + s + ': want REGEX=EXPECTED');
		return { re: s.slice(0, i), want: s.slice(i + 1) };
	};
	for (const arg of argv) {
		if (arg === '--diff') {
			a.diff = true;
			continue;
		}
		if (arg === '--hostile') {
			a.hostile = true;
			continue;
		}
		const v = /^--(viewport|resize)=(\d+)x(\d+)$/.exec(arg);
		if (v) {
			a[v[1] === 'viewport' ? 'view' : 'resize'] = { w: +v[2], h: +v[3] };
			continue;
		}
		const h = /^--helpers=(.*),(.*)$/s.exec(arg);
		if (h) {
			a.helpers = { helper: h[1], own: h[2] };
			continue;
		}
		const fs1 = /^--first-screen=(.*)$/s.exec(arg);
		if (fs1) {
			a.firstScreen.push(fs1[1]);
			continue;
		}
		const m = /^--(click|hover|ic|screenshot)=(.*)$/s.exec(arg);
		if (m)
			a[m[1]] = m[1] === 'ic' ? spec(m[2]) : m[2];
		else if (!a.file)
			a.file = arg;
		else
			a.searches.push(spec(arg));
	}
	if (!a.file)
		die('usage: browser_flamegraph.js FILE.svg [options] [REGEX=EXPECTED]...');
	return a;
}

async function main() {
	const args = parseArgs(process.argv.slice(2));
	const bin = findChromium();
	if (!bin) {
		console.error('browser_flamegraph: MISSING chromium (apt-get install chromium, ' +
			'or set PYSTROBE_CHROMIUM): the flame graph was not tested in a browser');
		process.exit(2);
	}
	const watchdog = setTimeout(() => die('timed out after 150 s'), 150000);
	const cdp = new Cdp(await WebSocketClient.connect(await startChromium(bin, args.view)));
	const { targetInfos } = await cdp.send('Target.getTargets');
	const page = targetInfos.find((t) => t.type === 'page');
	const targetId = page ? page.targetId
		: (await cdp.send('Target.createTarget', { url: 'about:blank' })).targetId;
	const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
	const s = (method, params) => cdp.send(method, params, sessionId);

	const errors = [];
	cdp.listeners.push((msg) => {
		if (msg.method === 'Runtime.exceptionThrown')
			errors.push(msg.params.exceptionDetails.exception
				? msg.params.exceptionDetails.exception.description
				: msg.params.exceptionDetails.text);
		else if (msg.method === 'Runtime.consoleAPICalled' && msg.params.type === 'error')
			errors.push('console.error: ' + msg.params.args.map((x) => x.value).join(' '));
		else if (msg.method === 'Page.javascriptDialogOpening')
			errors.push('a dialog opened: ' + msg.params.message);
	});
	await s('Page.enable');
	await s('Runtime.enable');
	await s('Emulation.setDeviceMetricsOverride',
		{ width: args.view.w, height: args.view.h, deviceScaleFactor: 1, mobile: false });
	const loaded = cdp.waitFor('Page.loadEventFired', 30000);
	const nav = await s('Page.navigate', { url: 'file://' + path.resolve(args.file) });
	if (nav.errorText)
		die('navigate: ' + nav.errorText);
	await loaded;

	const ev = async (expr) => {
		const r = await s('Runtime.evaluate',
			{ expression: expr, returnByValue: true, awaitPromise: true });
		if (r.exceptionDetails)
			die('evaluate ' + expr + ': ' + JSON.stringify(r.exceptionDetails));
		return r.result.value;
	};
	// Test strings go to the page as JSON, never spliced in as code.
	const q = JSON.stringify;
	await ev(`window.__frame = function (label) {
		var gs = document.getElementById('frames').getElementsByTagName('g');
		for (var i = 0; i < gs.length; i++) {
			var t = gs[i].getElementsByTagName('title')[0].textContent;
			if (t.lastIndexOf(label + ' (', 0) === 0)
				return gs[i];
		}
		return null;
	};
	window.__box = function (el) {
		var r = el.getBoundingClientRect();
		return { x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height };
	}; true`);
	const mouse = async (type, x, y) => s('Input.dispatchMouseEvent',
		{ type, x, y, button: type === 'mouseMoved' ? 'none' : 'left', clickCount: 1 });
	const click = async (x, y) => {
		await mouse('mouseMoved', x, y);
		await mouse('mousePressed', x, y);
		await mouse('mouseReleased', x, y);
	};
	const clickId = async (id) => {
		const b = await ev(`__box(document.getElementById(${q(id)}))`);
		check(b.w > 0, `#${id} is shown`);
		await click(b.x, b.y);
	};
	const frameBox = (label) => ev(`(function () { var g = __frame(${q(label)});
		return g && __box(g.getElementsByTagName('rect')[0]); })()`);
	// Whether the frame is drawn whole inside the window as it is scrolled.
	const onScreen = (b) => b && b.w >= 1 && b.x - b.w / 2 >= 0 &&
		b.x + b.w / 2 <= args.view.w && b.y - b.h / 2 >= 0 && b.y + b.h / 2 <= args.view.h;
	const where = (b) => b ? `${b.w.toFixed(1)}x${b.h.toFixed(1)} px at ` +
		`(${(b.x - b.w / 2).toFixed(1)}, ${(b.y - b.h / 2).toFixed(1)})` : 'not drawn';
	const matched = () => ev(`document.getElementById('matched').textContent`);
	const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
	const layoutWidth = () => ev(`pystrobeWidth()`);
	// The frames fill the window: "all" from the left margin to the right
	// one, less a scroll bar.
	const fillsAt = async (view) => {
		const b = await frameBox('all');
		return b && Math.abs(b.x - b.w / 2 - PAD) < 0.6 && b.x + b.w / 2 <= view.w - PAD + 0.6 &&
			b.x + b.w / 2 >= view.w - PAD - SCROLLBAR;
	};
	const fills = async (view) => {
		check(await ev(`window.innerWidth`) === view.w, `the window is ${view.w} px wide`);
		check(await fillsAt(view), `the frames fill it: "all" is ${where(await frameBox('all'))}`);
	};
	// Every label shown whole where it fits, else cut with an ellipsis, and
	// only then; measured in the page's font (whole labels are put in the
	// text for a moment to measure them).
	const labelsOk = async (when) => {
		const r = await ev(`(function () {
			var gs = document.getElementById('frames').getElementsByTagName('g'),
			    r = { whole: 0, cut: 0, bad: [] };
			for (var i = 0; i < gs.length; i++) {
				var g = gs[i], t = g.getElementsByTagName('text')[0],
				    w = +g.getElementsByTagName('rect')[0].getAttribute('width'),
				    title = g.getElementsByTagName('title')[0].textContent.split('\\n')[0],
				    label = g.getAttribute('data-l') ||
					title.replace(/ \\(\\d+ samples?, [\\d.]+%\\)$/, ''),
				    shown = t.textContent, len = t.getComputedTextLength(), full;
				if (g.getAttribute('class') === 'hide')
					continue;
				if (shown !== '' && len > w - 3 + 0.5)
					r.bad.push('"' + shown + '" overflows its ' + w + ' px');
				if (shown === label) {
					r.whole++;
					continue;
				}
				t.textContent = label;
				full = t.getComputedTextLength();
				t.textContent = shown;
				r.cut++;
				if (full <= w - 6 - 1.5)
					r.bad.push('"' + shown + '" cut, though "' + label + '" fits ' + w + ' px');
				else if (shown !== '' && !/\\u2026$/.test(shown))
					r.bad.push('"' + shown + '" cut without an ellipsis');
			}
			return r; })()`);
		check(r.bad.length === 0, `${when}: ${r.whole} labels whole, ${r.cut} cut where they ` +
			`do not fit${r.bad.length ? ': ' + r.bad.slice(0, 5).join('; ') : ''}`);
	};
	// A checkbox: its role, state, label and tooltip.
	const control = (id) => ev(`(function () { var e = document.getElementById(${q(id)});
		if (!e) return null;
		var t = e.getElementsByTagName('text')[0], tip = e.getElementsByTagName('title')[0];
		return { role: e.getAttribute('role'), checked: e.getAttribute('aria-checked'),
			label: t ? t.textContent : '', tip: tip ? tip.textContent : '',
			w: __box(e).w }; })()`);
	const highlighted = () => ev(`(function () { var n = 0,
		r = document.getElementById('frames').getElementsByTagName('rect');
		for (var i = 0; i < r.length; i++) n += r[i].style.fill ? 1 : 0; return n; })()`);
	const key = async (k, code, mods, text) => {
		await s('Input.dispatchKeyEvent', { type: 'keyDown', key: k, code, modifiers: mods,
			windowsVirtualKeyCode: k.toUpperCase().charCodeAt(0), text });
		await s('Input.dispatchKeyEvent', { type: 'keyUp', key: k, code, modifiers: mods,
			windowsVirtualKeyCode: k.toUpperCase().charCodeAt(0) });
	};

	// The document: an SVG document with our one script, which ran.
	check(await ev(`document.documentElement.localName === 'svg' &&
		document.documentElement.namespaceURI === 'http://www.w3.org/2000/svg'`),
	'the file opens as an SVG document');
	check(await ev(`document.getElementsByTagName('script').length`) === 1,
		'exactly one script element (no injected markup)');
	check(await ev(`typeof window.pystrobeSearch === 'function'`), 'the script ran');
	const nframes = await ev(`document.getElementById('frames').getElementsByTagName('g').length`);
	check(nframes > 0, `${nframes} frames drawn`);
	const hostile = await ev(`(function () { var t = document.getElementsByTagName('title');
		for (var i = 0; i < t.length; i++)
			if (t[i].textContent.indexOf('</text><script>alert(1)</script>') === 0) return true;
		return false; })()`);
	if (args.hostile)
		check(hostile, 'a hostile function name is shown as literal text');
	for (const label of args.firstScreen) {
		const b = await frameBox(label);
		check(onScreen(b), `${label} is on the first ${args.view.w}x${args.view.h} ` +
			`screen: ${where(b)}`);
	}
	await fills(args.view);
	await labelsOk('on load');
	if (args.resize) {
		await s('Emulation.setDeviceMetricsOverride', { width: args.resize.w,
			height: args.resize.h, deviceScaleFactor: 1, mobile: false });
		for (let i = 0; i < 50 && !(await fillsAt(args.resize)); i++)
			await sleep(100);
		await fills(args.resize);
		await labelsOk(`resized to ${args.resize.w}x${args.resize.h}`);
		args.view = args.resize;
	}
	const ic = await control('ic');
	check(ic && ic.role === 'checkbox' && ic.checked === 'false' && ic.label === 'ignore case' &&
		/^Ignore case/.test(ic.tip) && ic.w > 60,
	`the ignore-case control is a checkbox labelled "${ic && ic.label}", tooltip "${ic && ic.tip}"`);
	if (args.screenshot && args.firstScreen.length)
		await screenshot(s, args.screenshot.replace(/(\.png)?$/, '-first.png'));

	if (args.hover) {
		const b = await frameBox(args.hover);
		check(b, `frame ${args.hover} found`);
		await mouse('mouseMoved', b.x, b.y);
		const d = await ev(`document.getElementById('details').textContent`);
		const tail = args.diff ?
			/\(\d+ samples?, [\d.]+%\); ((new|gone) in AFTER; )?self: before \d+ \([\d.]+%\), after \d+ \([\d.]+%\), delta [+-]\d+ \([+-][\d.]+ pts\); total: before \d+ \([\d.]+%\), after \d+ \([\d.]+%\), delta [+-]\d+ \([+-][\d.]+ pts\)$/ :
			/\(\d+ samples?, [\d.]+%\)$/;
		check(d.indexOf(args.hover + ' (') === 0 && tail.test(d), `hovering shows "${d}"`);
		await mouse('mouseMoved', 5, 5);
	}

	// Searches, through each of the three ways a person starts one.
	const how = ['button', 'ctrl-f', 'slash'];
	for (let i = 0; i < args.searches.length; i++) {
		const { re, want } = args.searches[i];
		await ev(`window.prompt = function () { return ${q(re)}; }; true`);
		if (how[i % 3] === 'button')
			await clickId('search');
		else if (how[i % 3] === 'ctrl-f')
			await key('f', 'KeyF', 2, '');
		else
			await key('/', 'Slash', 0, '/');
		const got = await matched();
		check(got === want, `search ${q(re)} (${how[i % 3]}): "${got}", want "${want}"`);
		const n = await highlighted();
		check(/ 0\.0%$/.test(want) ? n === 0 : n > 0, `${n} frames highlighted`);
		check(await ev(`pystrobeSearch(${q(re)})`) === want, 'pystrobeSearch() agrees');
	}
	if (args.searches.length) {
		await clickId('clear');
		check(await matched() === '' && await highlighted() === 0, 'Clear removes the search');
	}
	if (args.ic) {
		await clickId('ic');
		check((await control('ic')).checked === 'true', 'a click ticks "ignore case"');
		await ev(`window.prompt = function () { return ${q(args.ic.re)}; }; true`);
		await clickId('search');
		const got = await matched();
		check(got === args.ic.want,
			`ignore-case search ${q(args.ic.re)}: "${got}", want "${args.ic.want}"`);
		await clickId('ic');
		check((await control('ic')).checked === 'false', 'another click unticks it');
		check(await matched() !== got || /0\.0%$/.test(got), 'turning ignore-case off searches again');
		await clickId('clear');
	}

	if (args.helpers)
		await helpers(args.helpers);

	if (args.click) {
		const LW = await layoutWidth();
		const before = await frameBox(args.click);
		check(before && before.w < LW - 2 * PAD - 1,
			`frame ${args.click} is ${before && before.w.toFixed(1)} px wide`);
		await click(before.x, before.y);
		const after = await frameBox(args.click);
		check(Math.abs(after.w - (LW - 2 * PAD)) < 1 && Math.abs(after.x - LW / 2) < 1,
			`after a click it fills the width (${after.w.toFixed(1)} px)`);
		check(onScreen(after) && Math.abs(after.y - before.y) < 1,
			`and stays where it was clicked: ${where(after)}`);
		const state = await ev(`(function () {
			var gs = document.getElementById('frames').getElementsByTagName('g'),
			    z = __frame(${q(args.click)}),
			    zy = +z.getElementsByTagName('rect')[0].getAttribute('y'),
			    r = { dim: 0, hidden: 0, shown: 0, bad: 0 };
			for (var i = 0; i < gs.length; i++) {
				var c = gs[i].getAttribute('class') || '', rect = gs[i].getElementsByTagName('rect')[0],
				    y = +rect.getAttribute('y'), w = rect.getBoundingClientRect().width;
				if (c === 'dim') { r.dim++; if (y >= zy || Math.abs(w - ${LW - 2 * PAD}) > 1) r.bad++; }
				else if (c === 'hide') { r.hidden++; if (w !== 0) r.bad++; }
				else r.shown++;
			}
			r.text = z.getElementsByTagName('text')[0].textContent;
			r.unzoom = document.getElementById('unzoom').getAttribute('class');
			return r; })()`);
		check(state.dim > 0 && state.bad === 0, `${state.dim} ancestors dimmed at full width`);
		check(state.hidden > 0, `${state.hidden} frames outside the zoom hidden`);
		check(state.text === args.click, `the zoomed frame's text is whole: "${state.text}"`);
		check(!/hide/.test(state.unzoom), 'Reset Zoom is shown');
		await labelsOk('zoomed');
		if (args.screenshot)
			await screenshot(s, args.screenshot.replace(/(\.png)?$/, '-zoom.png'));
		await clickId('unzoom');
		const reset = await frameBox(args.click);
		check(Math.abs(reset.w - before.w) < 0.2 && Math.abs(reset.x - before.x) < 0.2,
			'Reset Zoom restores the layout');
		check(await ev(`document.querySelectorAll('#frames g.dim, #frames g.hide').length`) === 0,
			'nothing dimmed or hidden after Reset Zoom');
	}

	async function helpers(h) {
		const c = await control('helpers');
		check(c && c.role === 'checkbox' && c.checked === 'true' && c.w > 100 &&
			/^narrow helper threads \(\d+%\)$/.test(c.label) && /standard library/.test(c.tip),
		`"${c && c.label}" is a ticked checkbox with a tooltip`);
		const total = await ev(`+__frame('all').getAttribute('data-n')`);
		const share = async (l) => await ev(`+__frame(${q(l)}).getAttribute('data-n')`) / total;
		const hs = await share(h.helper), os = await share(h.own);
		const inner = await layoutWidth() - 2 * PAD;
		const re = h.helper.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
		const pc = (x) => (100 * x).toFixed(1) + '%';
		let hb = await frameBox(h.helper), ob = await frameBox(h.own);
		check(hs > 0.5 && hb.w <= 0.05 * inner + 0.5, `${h.helper}, ${pc(hs)} of the ` +
			`samples, is drawn narrow: ${hb.w.toFixed(1)} px of ${inner}`);
		check(ob.w > 2 * os * inner, `${h.own}, ${pc(os)} of the samples, gets ` +
			`${ob.w.toFixed(1)} px`);
		check(await ev(`__frame(${q(h.own)}).getElementsByTagName('text')[0].textContent`) ===
			h.own, 'and its label is whole');
		await mouse('mouseMoved', hb.x, hb.y);
		const d = await ev(`document.getElementById('details').textContent`);
		check(d.indexOf(h.helper + ' (') === 0 && /a helper thread, drawn narrow/.test(d),
			`hovering the helper says so: "${d}"`);
		await mouse('mouseMoved', 5, 5);
		const narrow = await ev(`pystrobeSearch(${q(re)})`);
		await clickId('helpers');
		check((await control('helpers')).checked === 'false', 'a click unticks it');
		hb = await frameBox(h.helper);
		ob = await frameBox(h.own);
		check(Math.abs(hb.w - hs * inner) < 1 && Math.abs(ob.w - os * inner) < 1,
			`unticked, both are as wide as their samples: ${hb.w.toFixed(1)} and ` +
			`${ob.w.toFixed(1)} px`);
		await labelsOk('helper threads at their width');
		check(await ev(`pystrobeSearch(${q(re)})`) === narrow,
			`a search for the helper matches the same either way: "${narrow}"`);
		await clickId('helpers');
		hb = await frameBox(h.helper);
		check((await control('helpers')).checked === 'true' && hb.w <= 0.05 * inner + 0.5,
			'ticked again, narrow again');
		await ev(`pystrobeClear()`);
	}

	if (args.screenshot) {
		if (args.searches.length)
			await ev(`pystrobeSearch(${q(args.searches[0].re)})`);
		if (args.hover) {
			const b = await frameBox(args.hover);
			await mouse('mouseMoved', b.x, b.y);
		}
		await screenshot(s, args.screenshot);
	}
	check(errors.length === 0, 'no script errors' + (errors.length ? ': ' + errors.join('; ') : ''));
	clearTimeout(watchdog);
	await closeChromium(cdp);
	cleanup();
}

async function screenshot(s, file) {
	const { data } = await s('Page.captureScreenshot', { format: 'png' });
	fs.writeFileSync(file, Buffer.from(data, 'base64'));
	ok('screenshot in ' + file);
}

main().catch((e) => die(e.stack || String(e)));
