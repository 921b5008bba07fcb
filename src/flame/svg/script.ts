/**
 * The JavaScript embedded in every flame graph SVG: what a person can do with the picture in a browser.
 * - hover a frame: its name and counts appear at the bottom ("details");
 * - click a frame: zoom, so it spans the width; its ancestors stay below (dimmed), unrelated frames hide;
 *   "Reset Zoom" (top left), or a click on the root frame, undoes it;
 * - "Search" (top right), Ctrl-F or F3: a regular expression highlights matching frames and "Matched: N%" tells
 *   what share of all samples lies in them (frames nested in a matched frame count once); clicking the button
 *   again clears the search; "ic" or Ctrl-I toggles case-insensitive matching;
 * - the zoomed frame (x and y of its rectangle) and the search term live in the page URL (?x=..&y=..&s=..), so a
 *   link restores them.
 * The script reads its settings from `fg` (emitted before it by the renderer) and the frames from the DOM
 * (`#frames` children: a `title`, a `rect`, a `text` each); it keeps each frame's original geometry in memory
 * and recomputes positions from it, so zooming never accumulates rounding.
 *
 * Plain ES5 so that any SVG viewer with scripting runs it. The text must not contain "]]>" (it sits in CDATA).
 */
export const FLAMEGRAPH_SCRIPT = String.raw`"use strict";
var frames = [], byNode = [], zoomed = null, searchTerm = null, ignoreCase = false;
var detailsText, searchBtn, caseBtn, unzoomBtn, matchedText;

function init(evt) {
	detailsText = document.getElementById("details").firstChild;
	searchBtn = document.getElementById("search");
	caseBtn = document.getElementById("ignorecase");
	unzoomBtn = document.getElementById("unzoom");
	matchedText = document.getElementById("matched");
	var nodes = document.getElementById("frames").children;
	for (var i = 0; i < nodes.length; i++) {
		var node = nodes[i];
		var rect = node.getElementsByTagName("rect")[0];
		var title = node.getElementsByTagName("title")[0];
		if (!rect || !title) continue;
		var label = title.textContent;
		var f = {
			node: node,
			rect: rect,
			text: node.getElementsByTagName("text")[0],
			title: label,
			name: label.replace(/ \([^()]*\)$/, "").replace(/_\[[kwij]\]$/, ""),
			x: parseFloat(rect.getAttribute("x")),
			y: parseFloat(rect.getAttribute("y")),
			w: parseFloat(rect.getAttribute("width")),
			xAttr: rect.getAttribute("x"),
			yAttr: rect.getAttribute("y"),
			fill: rect.getAttribute("fill")
		};
		node.setAttribute("data-frame", String(frames.length));
		frames.push(f);
	}
	window.addEventListener("click", onClick, false);
	window.addEventListener("mouseover", function (e) {
		var f = frameOf(e.target);
		if (f) detailsText.nodeValue = fg.nameType + " " + f.title;
	}, false);
	window.addEventListener("mouseout", function (e) {
		if (frameOf(e.target)) detailsText.nodeValue = " ";
	}, false);
	window.addEventListener("keydown", onKey, false);
	var p = readParams();
	if (p.x !== undefined && p.y !== undefined) {
		for (var j = 0; j < frames.length; j++) {
			if (frames[j].xAttr === p.x && frames[j].yAttr === p.y) { zoom(frames[j]); break; }
		}
	}
	if (p.s) search(p.s);
}

// The frame a DOM node belongs to (the child of #frames it is in), or null.
function frameOf(node) {
	while (node && node.parentNode) {
		if (node.parentNode.id === "frames") {
			var k = node.getAttribute("data-frame");
			return k === null ? null : frames[+k];
		}
		node = node.parentNode;
	}
	return null;
}

function onClick(e) {
	var f = frameOf(e.target);
	if (f) {
		// Frames with links (--nameattr href) follow them unless Ctrl is held.
		if (f.node.nodeName === "a") {
			if (!e.ctrlKey) return;
			e.preventDefault();
		}
		// Zooming to a frame as wide as the graph (the root) is resetting the zoom.
		if (f.w >= rootWidth() - 0.0001) unzoom();
		else zoom(f);
		return;
	}
	var id = e.target && e.target.id;
	if (id === "unzoom") unzoom();
	else if (id === "search") searchPrompt();
	else if (id === "ignorecase") toggleCase();
}

function onKey(e) {
	var key = e.key || "";
	if (key === "F3" || e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && (key === "f" || key === "F" || e.keyCode === 70))) {
		e.preventDefault();
		searchPrompt();
	} else if (e.ctrlKey && (key === "i" || key === "I" || e.keyCode === 73)) {
		e.preventDefault();
		toggleCase();
	}
}

function rootWidth() {
	var w = 0;
	for (var i = 0; i < frames.length; i++) if (frames[i].w > w) w = frames[i].w;
	return w;
}

// Text that fits a frame w pixels wide: the whole name, or its start and "..", or nothing.
function labelFor(name, w) {
	var chars = Math.floor(w / (fg.fontSize * fg.fontWidth));
	if (chars < 3) return "";
	var cps = Array.from ? Array.from(name) : name.split("");
	if (chars >= cps.length) return name;
	return cps.slice(0, chars - 2).join("") + "..";
}

function place(f, x, w) {
	f.rect.setAttribute("x", x.toFixed(1));
	f.rect.setAttribute("width", w.toFixed(1));
	if (f.text) {
		f.text.setAttribute("x", (x + 3).toFixed(2));
		f.text.textContent = labelFor(f.name, w);
	}
}

function setClass(f, cls) {
	f.node.classList.remove("hide");
	f.node.classList.remove("parent");
	if (cls) f.node.classList.add(cls);
}

function zoom(target) {
	var eps = 0.0001;
	var full = fg.width - 2 * fg.xpad;
	var ratio = full / target.w;
	var left = target.x, right = target.x + target.w;
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i];
		var below = fg.inverted ? f.y < target.y : f.y > target.y;
		if (below) {
			if (f.x <= left + eps && f.x + f.w + eps >= right) {
				setClass(f, "parent");
				place(f, fg.xpad, full);
			} else {
				setClass(f, "hide");
			}
		} else if (f.x + eps >= left && f.x + eps < right) {
			setClass(f, null);
			place(f, fg.xpad + (f.x - left) * ratio, f.w * ratio);
		} else {
			setClass(f, "hide");
		}
	}
	zoomed = target;
	unzoomBtn.classList.remove("hide");
	var p = readParams();
	p.x = target.xAttr;
	p.y = target.yAttr;
	writeParams(p);
}

function unzoom() {
	for (var i = 0; i < frames.length; i++) {
		setClass(frames[i], null);
		place(frames[i], frames[i].x, frames[i].w);
	}
	zoomed = null;
	unzoomBtn.classList.add("hide");
	var p = readParams();
	delete p.x;
	delete p.y;
	writeParams(p);
}

function searchPrompt() {
	if (searchTerm !== null) {
		resetSearch();
		return;
	}
	var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
		(ignoreCase ? ", ignoring case" : "") + "\nPress Ctrl-i to toggle case sensitivity", "");
	if (term) search(term);
}

function toggleCase() {
	ignoreCase = !ignoreCase;
	if (ignoreCase) caseBtn.classList.add("show");
	else caseBtn.classList.remove("show");
	if (searchTerm !== null) search(searchTerm);
}

function resetSearch() {
	for (var i = 0; i < frames.length; i++) frames[i].rect.setAttribute("fill", frames[i].fill);
	searchTerm = null;
	searchBtn.classList.remove("show");
	searchBtn.firstChild.nodeValue = "Search";
	matchedText.classList.add("hide");
	matchedText.firstChild.nodeValue = " ";
	var p = readParams();
	delete p.s;
	writeParams(p);
}

function search(term) {
	var re;
	try {
		re = new RegExp(term, ignoreCase ? "i" : "");
	} catch (err) {
		matchedText.classList.remove("hide");
		matchedText.firstChild.nodeValue = "Invalid regexp";
		return;
	}
	searchTerm = term;
	var hits = [], total = 0;
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i];
		if (f.w > total) total = f.w;
		if (re.test(f.name)) {
			f.rect.setAttribute("fill", fg.searchColor);
			hits.push(f);
		} else {
			f.rect.setAttribute("fill", f.fill);
		}
	}
	// Share of all samples in matched frames: in original geometry, left to right and widest first, a frame inside
	// the previous counted one is nested in it and already counted.
	hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
	var sum = 0, end = -1;
	for (var k = 0; k < hits.length; k++) {
		if (hits[k].x >= end - 0.0001) {
			sum += hits[k].w;
			end = hits[k].x + hits[k].w;
		}
	}
	var pct = total > 0 ? (100 * sum) / total : 0;
	searchBtn.classList.add("show");
	searchBtn.firstChild.nodeValue = "Reset Search";
	matchedText.classList.remove("hide");
	matchedText.firstChild.nodeValue = "Matched: " + (pct >= 100 ? "100" : pct.toFixed(1)) + "%";
	var p = readParams();
	p.s = term;
	writeParams(p);
}

function readParams() {
	var out = {};
	var q = window.location.search.replace(/^\?/, "").split("&");
	for (var i = 0; i < q.length; i++) {
		var eq = q[i].indexOf("=");
		if (eq <= 0) continue;
		try {
			out[decodeURIComponent(q[i].slice(0, eq))] = decodeURIComponent(q[i].slice(eq + 1));
		} catch (err) {}
	}
	return out;
}

function writeParams(p) {
	var parts = [];
	for (var k in p) if (Object.prototype.hasOwnProperty.call(p, k)) parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(p[k]));
	var url = window.location.pathname + (parts.length ? "?" + parts.join("&") : "") + window.location.hash;
	try {
		history.replaceState(null, "", url);
	} catch (err) {}
}
`;
