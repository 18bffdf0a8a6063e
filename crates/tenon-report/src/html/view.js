// Tenon's HTML view: draws the data block of the page as SVG and wires the report to
// the drawing. No request leaves the page. Written for Tenon; see docs/diagnostics.md.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("tenon-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#1976d2", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037",
    "#283593", "#558b2f", "#00695c", "#4527a0"];
  const LABELS = {
    point_on_line: "PL", point_in_plane: "PP", line_in_plane: "LP", parallel: "\u2225",
    perpendicular: "\u22a5", angle: "\u2220", distance: "d", slot: "slot",
    point_line_distance: "PLd", parallel_at_distance: "\u2225d",
    coplanar_parallel_at_distance: "\u2225p", no_rotation: "NR", constant_velocity: "CV",
    screw_coupling: "SC", cylindrical: "cyl",
  };

  // ---- vectors and quaternions -------------------------------------------------------
  const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const mul = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
    a[0] * b[1] - a[1] * b[0]];
  const len = (a) => Math.sqrt(dot(a, a));
  const unit = (a) => { const n = len(a); return n > 0 ? mul(a, 1 / n) : [0, 0, 1]; };
  function rotate(q, v) {
    const u = [q[1], q[2], q[3]];
    const t = mul(cross(u, v), 2);
    return add(add(v, mul(t, q[0])), cross(u, t));
  }
  function perpendiculars(n) {
    const a = Math.abs(n[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
    const u = unit(cross(n, a));
    return [u, cross(n, u)];
  }

  // ---- the model at the current poses ------------------------------------------------
  let poses = D.parts.map((p) => ({ p: p.p, q: p.q }));
  function world(part, f) {
    if (part === null || part === undefined || !f) return null;
    const P = poses[part];
    return { o: add(P.p, rotate(P.q, f.o)), x: rotate(P.q, f.x), z: rotate(P.q, f.z) };
  }
  function partPoints(k) {
    const P = poses[k];
    return D.parts[k].pts.map((v) => add(P.p, rotate(P.q, v)));
  }

  // Extent of the drawing at the first pose: glyph sizes and the first fit follow it.
  let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  D.parts.forEach((_, k) => partPoints(k).forEach((v) => {
    for (let i = 0; i < 3; i++) { lo[i] = Math.min(lo[i], v[i]); hi[i] = Math.max(hi[i], v[i]); }
  }));
  if (!isFinite(lo[0])) { lo = [-1, -1, -1]; hi = [1, 1, 1]; }
  const centre = mul(add(lo, hi), 0.5);
  const extent = Math.max(len(sub(hi, lo)), 1e-9);
  // Glyphs are sized to the parts they sit on: a 100 mm link in a 300 m structure gets
  // a glyph of its own scale, not of the structure's.
  const sizes = D.parts.map((_, k) => {
    const pts = D.parts[k].pts;
    let r = 0;
    for (const v of pts) r = Math.max(r, len(v));
    return r;
  }).filter((r) => r > 0).sort((a, b) => a - b);
  const typical = sizes.length ? sizes[Math.floor(sizes.length / 2)] : extent;
  const G = Math.min(extent * 0.035, typical * 0.15);

  // ---- primitives: 3D polylines, screen-size dots and labels -------------------------
  const poly = (pts, cls, closed) => ({ k: "poly", pts, cls, closed });
  const dotAt = (at, r, cls) => ({ k: "dot", pts: [at], r, cls });
  const label = (at, text, cls) => ({ k: "text", pts: [at], text, cls });
  function circle(o, n, r, cls, from, to) {
    const [u, v] = perpendiculars(unit(n));
    const a0 = from || 0, a1 = to === undefined ? 2 * Math.PI : to;
    const pts = [];
    for (let i = 0; i <= 36; i++) {
      const a = a0 + (a1 - a0) * i / 36;
      pts.push(add(o, add(mul(u, r * Math.cos(a)), mul(v, r * Math.sin(a)))));
    }
    return poly(pts, cls);
  }
  const segment = (o, d, h, cls) => poly([add(o, mul(d, -h)), add(o, mul(d, h))], cls);
  function arrow(from, to, cls) {
    const d = unit(sub(to, from)), h = len(sub(to, from)) * 0.18;
    const [u] = perpendiculars(d);
    const back = sub(to, mul(d, h));
    return [poly([from, to], cls), poly([add(back, mul(u, h * 0.5)), to, sub(back, mul(u, h * 0.5))], cls)];
  }
  function planeSquare(f, s, cls) {
    const x = unit(f.x), y = cross(unit(f.z), x);
    const c = [[1, 1], [-1, 1], [-1, -1], [1, -1], [1, 1]];
    return poly(c.map(([a, b]) => add(f.o, add(mul(x, a * s), mul(y, b * s)))), cls);
  }
  function profile(f, pts, cls) {
    const x = unit(f.x), y = cross(unit(f.z), x);
    const w = pts.map(([a, b]) => add(f.o, add(mul(x, a), mul(y, b))));
    if (w.length) w.push(w[0]);
    return poly(w, cls);
  }
  function helix(f, s, cls) {
    const z = unit(f.z), [u, v] = perpendiculars(z), pts = [];
    for (let i = 0; i <= 72; i++) {
      const a = i / 72 * 6 * Math.PI;
      pts.push(add(f.o, add(mul(z, -s + 2 * s * i / 72),
        add(mul(u, 0.45 * s * Math.cos(a)), mul(v, 0.45 * s * Math.sin(a))))));
    }
    return poly(pts, cls);
  }

  function jointPrims(J) {
    const a = world(J.pi, J.i), b = world(J.pj, J.j), out = [];
    const c = a || b;
    if (!c) return out;
    if (a && b && len(sub(a.o, b.o)) > extent * 1e-6) out.push(poly([a.o, b.o], "link"));
    const z = unit(c.z);
    switch (J.type) {
      case "revolute":
        out.push(circle(c.o, z, G * 0.45, "fill"), segment(c.o, z, G));
        break;
      case "cylindrical":
        out.push(circle(c.o, z, G * 0.45), segment(c.o, z, G * 1.8), label(c.o, "cyl"));
        break;
      case "slider": {
        const x = unit(sub(c.x, mul(z, dot(c.x, z)))), y = cross(z, x);
        const corner = (p, q) => add(c.o, add(mul(z, p * G), mul(y, q * G * 0.35)));
        out.push(poly([corner(1, 1), corner(-1, 1), corner(-1, -1), corner(1, -1), corner(1, 1)], "fill"),
          segment(c.o, z, G * 1.8));
        break;
      }
      case "ball":
        out.push(dotAt(c.o, 7, "ball"));
        break;
      case "universal":
      case "constant_velocity":
        if (a) out.push(circle(a.o, a.z, G * 0.5));
        if (b) out.push(circle(b.o, b.z, G * 0.5));
        if (J.type === "constant_velocity") out.push(label(c.o, "CV"));
        break;
      case "screw":
      case "screw_coupling":
        out.push(helix(c, G, ""), segment(c.o, z, G * 1.4));
        if (J.type === "screw_coupling") out.push(label(c.o, "SC"));
        break;
      case "gear":
      case "belt": {
        if (a) out.push(circle(a.o, a.z, J.radius_i || G, "pitch"));
        if (b) out.push(circle(b.o, b.z, J.radius_j || G, "pitch"));
        if (J.type === "belt" && a && b) {
          const d = sub(b.o, a.o), n = unit(cross(unit(a.z), unit(d)));
          const ri = J.radius_i || G, rj = J.radius_j || G;
          out.push(poly([add(a.o, mul(n, ri)), add(b.o, mul(n, rj))]),
            poly([sub(a.o, mul(n, ri)), sub(b.o, mul(n, rj))]));
        }
        break;
      }
      case "rack_pinion":
        if (a) out.push(segment(a.o, unit(a.x), (J.radius || G) * 3, "rack"));
        if (b) out.push(circle(b.o, b.z, J.radius || G, "pitch"));
        break;
      case "cam":
      case "curve_contact":
        if (b && J.profile_j) out.push(profile(b, J.profile_j, "profile"));
        if (a && J.profile_i) out.push(profile(a, J.profile_i, "profile"));
        if (a) out.push(dotAt(a.o, 3.5, "solid"));
        break;
      case "planar":
        out.push(planeSquare(c, G * 0.7, "fill"));
        break;
      case "fixed":
        out.push(dotAt(c.o, 4.5, "solid weld"));
        break;
      default:
        out.push(dotAt(c.o, 3, "solid"), label(c.o, LABELS[J.type] || J.type));
    }
    return out;
  }

  function motionPrims(M) {
    const L = extent * 0.16, axis = unit(M.axis);
    if (M.kind === "translation") {
      const from = M.part !== null && M.part !== undefined ? centroid(M.part) : centre;
      return arrow(from, add(from, mul(axis, L)), "");
    }
    const o = M.point, r = G * 1.1;
    const out = [segment(o, axis, L, "axis"), circle(o, axis, r, "", 0, 1.5 * Math.PI)];
    const [u, v] = perpendiculars(axis);
    const end = add(o, mul(v, -r)), tangent = u;
    out.push(...arrow(sub(end, mul(tangent, r * 0.6)), end, "").slice(1));
    if (M.kind === "screw") out.push(label(add(o, mul(axis, L)), "pitch " + M.pitch));
    if (M.idle) out.push(label(add(o, mul(axis, -L)), "idle"));
    return out;
  }
  function centroid(k) {
    const pts = partPoints(k);
    return mul(pts.reduce(add, [0, 0, 0]), 1 / pts.length);
  }

  // ---- the document ------------------------------------------------------------------
  const el = (name, attrs, parent) => {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const html = (name, attrs, parent, text) => {
    const e = document.createElement(name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  };

  const stage = html("div", { id: "stage" }, document.body);
  const svg = el("svg", { id: "drawing", role: "img", "aria-label": "kinematic diagram" }, stage);
  const defs = el("defs", {}, svg);
  const hatch = el("pattern", { id: "hatch", width: 5, height: 5, patternUnits: "userSpaceOnUse",
    patternTransform: "rotate(45)" }, defs);
  el("line", { x1: 0, y1: 0, x2: 0, y2: 5, stroke: "#555", "stroke-width": 1.5 }, hatch);
  const shade = el("radialGradient", { id: "ballshade", cx: "35%", cy: "35%", r: "65%" }, defs);
  el("stop", { offset: "0%", "stop-color": "#ffffff" }, shade);
  el("stop", { offset: "100%", "stop-color": "#90a4ae" }, shade);
  const layers = { parts: el("g", { id: "parts" }, svg), joints: el("g", { id: "joints" }, svg),
    motions: el("g", { id: "motions" }, svg) };
  const tip = html("div", { id: "tip" }, stage);
  const tools = html("div", { id: "tools" }, stage);
  html("div", { id: "help" }, stage,
    "drag: turn \u00b7 shift-drag or right-drag: pan \u00b7 wheel: zoom \u00b7 double-click: fit");

  // Items: something drawn, with its primitives and their elements.
  const items = [];
  function item(group, make) {
    const it = { group, make, els: [] };
    items.push(it);
    return it;
  }
  function realise(it) {
    const prims = it.make();
    prims.forEach((p, i) => {
      let e = it.els[i];
      if (!e) {
        const tag = p.k === "poly" ? (p.multi ? "path" : "polyline") : p.k === "dot" ? "circle" : "text";
        e = el(tag, p.cls ? { class: p.cls } : {}, it.group);
        if (p.k === "text") e.textContent = p.text;
        if (p.k === "dot") e.setAttribute("r", p.r);
        it.els.push(e);
      }
      e._prim = p;
    });
  }

  // Parts: the skeleton through each part's origin and markers.
  const partEls = [];
  const simplified = D.simplified;
  if (simplified) {
    const byCluster = new Map();
    D.parts.forEach((p, k) => {
      const key = p.grounded ? "g" : String(p.cluster);
      if (!byCluster.has(key)) byCluster.set(key, []);
      byCluster.get(key).push(k);
    });
    byCluster.forEach((ks, key) => {
      const cls = key === "g" ? "part grounded" : "part";
      const g = el("g", { class: cls, "data-cluster": key }, layers.parts);
      if (key !== "g") g.style.stroke = PALETTE[Number(key) % PALETTE.length] || "#555";
      item(g, () => [{ k: "poly", multi: true, lines: ks.map(partPoints), pts: [] }]);
    });
  } else {
    D.parts.forEach((p, k) => {
      const g = el("g", { class: "part" + (p.grounded ? " grounded" : ""), "data-part": k }, layers.parts);
      // A part's colour is its cluster's (a run's page has no clusters: each its own).
      if (!p.grounded) {
        const c = p.cluster !== null && p.cluster !== undefined ? p.cluster : k;
        g.style.stroke = PALETTE[c % PALETTE.length];
      }
      partEls[k] = g;
      el("title", {}, g).textContent = p.id + (p.grounded ? " (grounded)" : "");
      item(g, () => {
        const pts = partPoints(k);
        const out = [poly(pts.length > 1 ? pts : [pts[0], pts[0]])];
        if (p.grounded) out.push(dotAt(pts[0], 5, "ground"));
        return out;
      });
    });
  }

  // Joints: one glyph each (at reduced detail, joints that hold are dots of one path).
  const jointEls = [];
  const dotted = [];
  D.joints.forEach((J, k) => {
    if (simplified && J.status === "ok") { dotted.push(k); return; }
    const cls = "joint " + J.type + " status-" + J.status + (J.disagreeing ? " disagreeing" : "");
    const g = el("g", { class: cls, "data-joint": k, "data-type": J.type, "data-status": J.status }, layers.joints);
    jointEls[k] = g;
    item(g, () => jointPrims(J));
  });
  if (dotted.length) {
    const g = el("g", { class: "dots", "data-joints": dotted.length }, layers.joints);
    item(g, () => [{ k: "poly", multi: true, dots: true, pts: [], lines: dotted.map((k) => {
      const J = D.joints[k], f = world(J.pi, J.i) || world(J.pj, J.j);
      return f ? [f.o] : [];
    }) }]);
  }

  // Free motions where they act.
  const motionEls = [];
  D.motions.slice(0, D.drawn_motions).forEach((M, k) => {
    const g = el("g", { class: "motion " + M.kind + (M.idle ? " idle" : ""), "data-motion": k,
      "data-part": M.part }, layers.motions);
    motionEls[k] = g;
    item(g, () => motionPrims(M));
  });
  items.forEach(realise);

  // ---- the view: orthographic, turned by the mouse -----------------------------------
  let view = null, S = 1, pan = [0, 0];
  function orient(w, up) {
    w = unit(w);
    let r = cross(up, w);
    if (len(r) < 1e-9) r = cross([0, 1, 0], w);
    r = unit(r);
    view = [r, cross(w, r), w];
  }
  function fit() {
    const box = svg.getBoundingClientRect();
    // The parts and the joints' glyphs (pitch circles, profiles) fit; free motions
    // may act far away (a coupler's instant centre) and are left out.
    let span = [0, 0];
    const reach = (v) => {
      const d = sub(v, centre);
      span[0] = Math.max(span[0], Math.abs(dot(view[0], d)));
      span[1] = Math.max(span[1], Math.abs(dot(view[1], d)));
    };
    for (const it of items) {
      if (it.group.closest("#motions")) continue;
      for (const e of it.els) {
        const p = e._prim;
        (p.multi ? p.lines.flat() : p.pts).forEach(reach);
      }
    }
    const sx = box.width / 2 / Math.max(span[0] + G * 2, 1e-12);
    const sy = box.height / 2 / Math.max(span[1] + G * 2, 1e-12);
    S = 0.9 * Math.min(sx, sy);
    pan = [0, 0];
  }
  const flat = (i) => hi[i] - lo[i] <= extent * 1e-6;
  function home() {
    if (flat(2)) orient([0, 0, 1], [0, 1, 0]);
    else if (flat(1)) orient([0, -1, 0], [0, 0, 1]);
    else if (flat(0)) orient([1, 0, 0], [0, 0, 1]);
    else orient([1, -1, 0.8], [0, 0, 1]);
    fit();
  }
  let W = 0, H = 0;
  function project(v) {
    const d = sub(v, centre);
    return [W / 2 + pan[0] + S * dot(view[0], d), H / 2 + pan[1] - S * dot(view[1], d)];
  }
  const f1 = (x) => x.toFixed(1);
  function draw() {
    const box = svg.getBoundingClientRect();
    W = box.width; H = box.height;
    for (const it of items) {
      for (const e of it.els) {
        const p = e._prim;
        if (p.k === "poly" && p.multi) {
          const d = [];
          for (const line of p.lines) {
            line.forEach((v, i) => {
              const s = project(v);
              d.push((i ? "L" : "M") + f1(s[0]) + " " + f1(s[1]));
            });
            if (p.dots && line.length) d.push("h0");
          }
          e.setAttribute("d", d.join(""));
        } else if (p.k === "poly") {
          e.setAttribute("points", p.pts.map((v) => { const s = project(v); return f1(s[0]) + "," + f1(s[1]); }).join(" "));
        } else {
          const s = project(p.pts[0]);
          if (p.k === "dot") { e.setAttribute("cx", f1(s[0])); e.setAttribute("cy", f1(s[1])); }
          else { e.setAttribute("x", f1(s[0] + 6)); e.setAttribute("y", f1(s[1] - 6)); }
        }
      }
    }
    svg.dataset.drawn = String(Number(svg.dataset.drawn || 0) + 1);
  }
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }
  function relayout() { items.forEach(realise); redraw(); }

  let drag = null;
  svg.addEventListener("contextmenu", (e) => e.preventDefault());
  svg.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, pan: e.shiftKey || e.button !== 0 };
    svg.setPointerCapture(e.pointerId);
    svg.classList.add("dragging");
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) { pan = [pan[0] + dx, pan[1] + dy]; }
    else {
      const a = dx * 0.01, b = dy * 0.01;
      let [r, u, w] = view;
      [r, w] = [add(mul(r, Math.cos(a)), mul(w, -Math.sin(a))), add(mul(w, Math.cos(a)), mul(r, Math.sin(a)))];
      [u, w] = [add(mul(u, Math.cos(b)), mul(w, Math.sin(b))), add(mul(w, Math.cos(b)), mul(u, -Math.sin(b)))];
      w = unit(w); r = unit(cross(u, w)); u = cross(w, r);
      view = [r, u, w];
    }
    redraw();
  });
  const release = () => { drag = null; svg.classList.remove("dragging"); };
  svg.addEventListener("pointerup", release);
  svg.addEventListener("pointercancel", release);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const box = svg.getBoundingClientRect();
    const f = Math.exp(-e.deltaY * 0.0015);
    const mx = e.clientX - box.left - W / 2, my = e.clientY - box.top - H / 2;
    pan = [mx - (mx - pan[0]) * f, my - (my - pan[1]) * f];
    S *= f;
    redraw();
  }, { passive: false });
  svg.addEventListener("dblclick", () => { fit(); redraw(); });
  window.addEventListener("resize", redraw);
  const views = [["home", "home"], ["fit", null], ["xy", [[0, 0, 1], [0, 1, 0]]], ["xz", [[0, -1, 0], [0, 0, 1]]],
    ["yz", [[1, 0, 0], [0, 0, 1]]], ["iso", [[1, -1, 0.8], [0, 0, 1]]]];
  views.forEach(([name, v]) => {
    const b = html("button", { type: "button", "data-view": name }, tools, name);
    b.addEventListener("click", () => {
      if (v === "home") home();
      else { if (v) orient(v[0], v[1]); fit(); }
      redraw();
    });
  });

  // ---- highlighting ------------------------------------------------------------------
  const rows = [];
  function focus(joints, parts) {
    svg.classList.add("focus");
    joints.forEach((k) => { if (jointEls[k]) jointEls[k].classList.add("hl"); });
    parts.forEach((k) => {
      if (partEls[k]) partEls[k].classList.add("hl");
      motionEls.forEach((m, i) => { if (m && D.motions[i].part === k) m.classList.add("hl"); });
    });
    const js = new Set(joints);
    rows.forEach((r) => { if (r._joints.some((k) => js.has(k))) r.classList.add("hl"); });
  }
  function unfocus() {
    svg.classList.remove("focus");
    document.querySelectorAll(".hl").forEach((e) => e.classList.remove("hl"));
  }
  function jointSet(k) {
    const J = D.joints[k], all = new Set([k]);
    (J.sets || []).forEach((s) => D.conflicts[s].joints.forEach((m) => all.add(m)));
    return [...all];
  }
  function violationText(k) {
    const J = D.joints[k];
    return (J.sets || []).map((s) => {
      const c = D.conflicts[s], v = c.violation === null ? "an amount that cannot be evaluated" : c.violation.toPrecision(4);
      const names = c.joints.map((m) => D.joints[m].id).join(", ");
      return (c.conflict ? "conflict" : "disagreement within the tolerance") + " among " + names + ": off by " + v;
    }).join("; ");
  }
  function showTip(e, text) {
    const box = stage.getBoundingClientRect();
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = (e.clientX - box.left + 12) + "px";
    tip.style.top = (e.clientY - box.top + 12) + "px";
  }
  jointEls.forEach((g, k) => {
    const J = D.joints[k];
    const text = J.id + " (" + J.type + "): " + J.status + (J.sets ? "; " + violationText(k) : "");
    el("title", {}, g).textContent = text;
    g.addEventListener("mouseenter", (e) => {
      focus(jointSet(k), [J.pi, J.pj].filter((p) => p !== null && p !== undefined));
      showTip(e, text);
    });
    g.addEventListener("mouseleave", () => { unfocus(); tip.style.display = "none"; });
  });

  // ---- the report beside the drawing -------------------------------------------------
  let player = null; // a run's frame player, made by runReport
  const aside = html("aside", { id: "report" }, document.body);
  html("h1", {}, aside, D.title);
  function row(e, joints, parts) {
    e._joints = joints;
    rows.push(e);
    e.dataset.joints = joints.join(" ");
    e.dataset.parts = parts.join(" ");
    e.addEventListener("mouseenter", () => focus(joints, parts));
    e.addEventListener("mouseleave", unfocus);
  }
  if (D.run) runReport(); else checkReport();

  function checkReport() {
  const head = html("p", {}, aside);
  html("span", { class: "status-" + D.status, id: "status" }, head, D.status === "solved" ? "solved" : "NOT solved");
  head.appendChild(document.createTextNode("; largest residual " + Number(D.max_residual).toExponential(1) + "; " +
    (D.dof === null ? "degrees of freedom not counted" : D.dof + " degree(s) of freedom left")));
  const t = D.tolerances;
  html("p", {}, aside, "tolerance: lengths " + t.length.toExponential(1) + " (the model reaches " +
    t.reach.toFixed(1) + " from the origin), angles " + t.angle.toExponential(1) + " rad" +
    (t.geometric > t.length ? "; geometric " + t.geometric : ""));
  const legend = html("p", { class: "legend" }, aside);
  [["#263238", "holds"], ["#e39b00", "redundant"], ["#d32f2f", "conflicting"], ["#1565c0", "free motion"]]
    .forEach(([c, name]) => { const s = html("span", {}, legend); html("i", { style: "background:" + c }, s); s.appendChild(document.createTextNode(name)); });
  D.simplifications.forEach((s) => html("p", { class: "simplified" }, aside, "Simplified: " + s));

  const attention = D.joints.map((J, k) => k).filter((k) => D.joints[k].status !== "ok" || D.joints[k].disagreeing);
  if (attention.length) {
    html("h2", {}, aside, "Joints to look at");
    const table = html("table", { class: "attention" }, aside);
    const hr = html("tr", {}, table);
    ["joint", "type", "found", "off by (its set)"].forEach((h) => html("th", {}, hr, h));
    attention.slice(0, 500).forEach((k) => {
      const J = D.joints[k], tr = html("tr", { class: "joint-row status-" + J.status }, table);
      html("td", {}, tr, J.id); html("td", {}, tr, J.type);
      html("td", {}, tr, J.disagreeing && J.status !== "conflicting" ? "disagrees (placed)" : J.status);
      const v = (J.sets || []).map((s) => D.conflicts[s].violation).filter((x) => x !== null);
      html("td", {}, tr, v.length ? Math.max(...v).toPrecision(4) : "");
      row(tr, jointSet(k), [J.pi, J.pj].filter((p) => p !== null && p !== undefined));
    });
  }
  D.clusters.forEach((C) => {
    const names = C.parts.slice(0, 8).map((p) => D.parts[p].id).join(", ") +
      (C.parts.length > 8 ? " and " + (C.parts.length - 8) + " more parts" : "");
    const h = html("h2", { class: "cluster" }, aside);
    h.appendChild(document.createTextNode("cluster " + (C.index + 1) + " (" + names + "): "));
    html("span", { class: "cstatus " + C.status }, h, C.status.replace(/_/g, "-"));
    h.appendChild(document.createTextNode(", " + (C.dof === null ? "not analysed" : C.dof + " degree(s) of freedom")));
    const inCluster = new Set(C.parts);
    row(h, D.joints.map((J, k) => k).filter((k) => inCluster.has(D.joints[k].pi) || inCluster.has(D.joints[k].pj)), C.parts);
    const ul = html("ul", {}, aside);
    C.sentences.forEach((s) => row(html("li", { class: "sentence" }, ul, s.text), s.joints, s.parts));
    if (C.more) html("li", {}, ul, "... and " + C.more + " more (tenon check --json lists them all)");
  });
  if (D.cluster_count > D.clusters.length) html("p", {}, aside, "... and " + (D.cluster_count - D.clusters.length) + " more clusters");
  D.notes.forEach((n) => html("p", { class: "note" }, aside, "note: " + n));
  }

  // ---- runs: the same drawing over the frames, the plots under it ---------------------
  function runReport() {
    const R = D.run;
    html("pre", { class: "summary" }, aside, R.summary);
    D.simplifications.forEach((s) => html("p", { class: "simplified" }, aside, "Simplified: " + s));
    stage.classList.add("with-run");
    const bar = html("div", { id: "player" }, stage);
    const play = html("button", { type: "button", id: "play" }, bar, "play");
    const slider = html("input", { type: "range", id: "time", min: 0, max: Math.max(R.times.length - 1, 0), value: 0, step: 1 }, bar);
    const clock = html("span", { id: "clock" }, bar);
    const speed = html("select", { id: "speed" }, bar);
    [0.25, 0.5, 1, 2, 4].forEach((v) => { const o = html("option", { value: v }, speed, v + "x"); if (v === 1) o.selected = true; });
    const plots = html("div", { id: "plots" }, document.body);
    document.body.insertBefore(plots, aside);
    const column = html("div", { id: "column" }, null);
    document.body.insertBefore(column, stage);
    column.appendChild(stage);
    column.appendChild(plots);
    R.plots.forEach((p) => {
      const fig = html("figure", { class: "plot" }, plots);
      fig.innerHTML = p.svg;
      if (p.note) html("figcaption", {}, fig, p.note);
    });
    const cursor = [];
    plots.querySelectorAll("figure.plot > svg").forEach((s) => {
      cursor.push(el("line", { class: "cursor", y1: 0, y2: s.getAttribute("height") || 260 }, s));
    });
    const n = R.parts.length;
    function show(f) {
      f = Math.max(0, Math.min(R.times.length - 1, f));
      const row = R.poses[f] || [];
      R.parts.forEach((k, i) => {
        if (k === null || k === undefined) return;
        const o = 7 * i;
        poses[k] = { p: [row[o], row[o + 1], row[o + 2]], q: [row[o + 3], row[o + 4], row[o + 5], row[o + 6]] };
      });
      player.frame = f;
      slider.value = f;
      clock.textContent = "t = " + R.times[f].toPrecision(4) + " (frame " + (f + 1) + " of " + R.times.length + ")";
      svg.dataset.frame = String(f);
      // The time cursor on each plot: plotters draws x from the plot area's left edge.
      const t0 = R.times[0], t1 = R.times[R.times.length - 1];
      cursor.forEach((c) => {
        const x = 78 + (t1 > t0 ? (R.times[f] - t0) / (t1 - t0) : 0) * (720 - 8 - 78);
        c.setAttribute("x1", x); c.setAttribute("x2", x);
      });
      relayout();
    }
    player = { frame: 0, playing: false, show };
    let last = null;
    function tick(now) {
      if (!player.playing) return;
      if (last !== null) {
        const dt = (now - last) / 1000 * Number(speed.value);
        const target = R.times[player.frame] + dt;
        let f = player.frame;
        while (f + 1 < R.times.length && R.times[f + 1] <= target) f++;
        if (f === player.frame && f + 1 < R.times.length && R.times[f + 1] - R.times[f] <= 0) f++;
        if (f !== player.frame) { show(f); last = now; }
        if (f >= R.times.length - 1) { player.playing = false; play.textContent = "play"; return; }
      } else last = now;
      requestAnimationFrame(tick);
    }
    play.addEventListener("click", () => {
      player.playing = !player.playing;
      play.textContent = player.playing ? "pause" : "play";
      if (player.playing) {
        if (player.frame >= R.times.length - 1) show(0);
        last = null;
        requestAnimationFrame(tick);
      }
    });
    slider.addEventListener("input", () => show(Number(slider.value)));
    if (n && R.times.length) show(0);
  }

  // ---- runs: the same drawing over frames ---------------------------------------------
  const api = {
    data: D,
    setPoses(list) { poses = list.map((p) => ({ p: p.p, q: p.q })); relayout(); },
    showFrame(f) { if (player) player.show(f); },
    get frame() { return player ? player.frame : null; },
    project(v) { return project(v); },
    draw,
  };
  window.tenonView = api;

  home();
  draw();
  document.body.dataset.ready = "1";
})();
