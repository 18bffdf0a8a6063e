// Opens the HTML view of every fixture in headless Chromium (Debian's, driven by
// playwright-core) and checks it against the JSON report of the same check:
// no console errors, no request leaving the page, one glyph per joint with the status
// the report gives, one mark per free motion, a conflict set lit together on hover.
// Saves screenshots under the output folder (not committed).
//
// usage: node view-test.mjs TENON_BINARY FIXTURES_DIR OUT_DIR
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [tenon, fixtures, out] = process.argv.slice(2).map((p) => resolve(p));
mkdirSync(out, { recursive: true });

function check(file, page) {
  let stdout;
  try {
    stdout = execFileSync(tenon, ["check", file, "--json", "--html", page],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    if (e.status !== 1) throw e; // 1: not solved or conflicting, still reported
    stdout = e.stdout;
  }
  return JSON.parse(stdout);
}

const failures = [];
const fail = (what) => { failures.push(what); console.error("FAIL " + what); };
const expect = (cond, what) => { if (!cond) fail(what); };

const files = [
  ...readdirSync(fixtures).filter((f) => f.endsWith(".json")).map((f) => join(fixtures, f)),
  ...readdirSync(join(fixtures, "conflicting")).map((f) => join(fixtures, "conflicting", f)),
].sort();

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const context = await browser.newContext({ viewport: { width: 1200, height: 700 } });
let pages = 0, glyphs = 0, marks = 0, hovers = 0;

// Opens a page, failing the test on any console error or any request it makes.
async function open(html, name) {
  const url = pathToFileURL(html).href;
  const page = await context.newPage();
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.route("**/*", (route) => {
    const u = route.request().url();
    if (u === url) return route.continue();
    requests.push(u);
    return route.abort();
  });
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20000 });
  pages++;
  expect(errors.length === 0, `${name}: console errors: ${errors.join(" | ")}`);
  expect(requests.length === 0, `${name}: the page requested ${requests.join(", ")}`);
  return page;
}

for (const file of files) {
  const name = basename(file, ".json");
  const html = join(out, name + ".html");
  const report = check(file, html);
  const input = JSON.parse(readFileSync(file, "utf8"));
  const page = await open(html, name);

  // One glyph per joint of the file, with the report's status.
  const drawn = await page.$$eval("g.joint", (gs) => gs.map((g) => ({
    id: window.tenonView.data.joints[Number(g.dataset.joint)].id,
    status: g.dataset.status, cls: g.getAttribute("class"),
  })));
  const joints = (input.joints || []).map((j) => j.id);
  expect(drawn.length === joints.length, `${name}: ${drawn.length} joint glyphs for ${joints.length} joints`);
  const redundant = new Set(report.clusters.flatMap((c) => c.redundant));
  const conflicting = new Set(report.clusters.flatMap((c) => c.conflicting));
  for (const g of drawn) {
    const want = conflicting.has(g.id) ? "conflicting" : redundant.has(g.id) ? "redundant"
      : (input.joints.find((j) => j.id === g.id) || {}).suppressed ? "suppressed" : "ok";
    expect(g.status === want && g.cls.includes("status-" + want), `${name}: joint ${g.id} drawn ${g.status}, report says ${want}`);
    glyphs++;
  }

  // One mark per reported free motion, each with its kind and idleness.
  const motions = await page.$$eval("g.motion", (gs) => gs.map((g) => g.getAttribute("class")));
  expect(motions.length === report.free_motions.length, `${name}: ${motions.length} motion marks for ${report.free_motions.length} free motions`);
  report.free_motions.forEach((m, k) => {
    const cls = motions[k] || "";
    expect(cls.includes(m.kind) && cls.includes("idle") === m.idle, `${name}: motion ${k} drawn '${cls}', report says ${m.kind}${m.idle ? " idle" : ""}`);
    marks++;
  });

  // Hovering a conflicting joint lights its whole set and dims the rest.
  for (const c of report.clusters) {
    for (const set of c.conflicts) {
      const last = set.joints[set.joints.length - 1];
      const index = await page.evaluate((id) => window.tenonView.data.joints.findIndex((j) => j.id === id), last);
      await page.hover(`g.joint[data-joint='${index}']`, { force: true });
      const lit = await page.$$eval("g.joint.hl", (gs) => gs.map((g) => window.tenonView.data.joints[Number(g.dataset.joint)].id));
      expect(set.joints.every((j) => lit.includes(j)) && lit.length === set.joints.length,
        `${name}: hovering ${last} lit [${lit}], its set is [${set.joints}]`);
      const focused = await page.$eval("svg#drawing", (s) => s.classList.contains("focus"));
      expect(focused, `${name}: hovering ${last} did not dim the rest`);
      const rows = await page.$$eval("aside .hl", (r) => r.length);
      expect(rows > 0, `${name}: hovering ${last} lit no row of the report`);
      await page.screenshot({ path: join(out, name + "-hover.png") });
      await page.mouse.move(1, 1);
      hovers++;
    }
  }

  // Turning the view moves the drawing.
  const before = await page.$eval("g.part polyline, g.part path", (e) => e.getAttribute("points") || e.getAttribute("d"));
  const box = await page.$eval("svg#drawing", (s) => { const b = s.getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; });
  await page.mouse.move(box[0], box[1]);
  await page.mouse.down();
  await page.mouse.move(box[0] + 80, box[1] + 40, { steps: 4 });
  await page.mouse.up();
  await page.waitForTimeout(50);
  const after = await page.$eval("g.part polyline, g.part path", (e) => e.getAttribute("points") || e.getAttribute("d"));
  expect(before !== after, `${name}: dragging did not turn the view`);
  await page.click("button[data-view='home']");

  if (["four-bar", "bent-four-bar", "slider-crank"].includes(name)) {
    await page.waitForTimeout(50);
    await page.screenshot({ path: join(out, name + ".png") });
  }
  await page.close();
}

// Runs: the slider-crank's kinematics animated. Played, the frame advances, and the
// crank is drawn where the JSON trajectory of the same run puts it.
async function openRun(args, name) {
  const html = join(out, name + ".html"), traj = join(out, name + ".json"), plot = join(out, name + ".svg");
  execFileSync(tenon, [...args, "--html", html, "-o", traj, "--plot", plot], { stdio: ["ignore", "pipe", "pipe"] });
  const page = await open(html, name);
  const trajectory = JSON.parse(readFileSync(traj, "utf8"));
  const svgText = readFileSync(plot, "utf8");
  return { page, trajectory, svgText };
}
const rotate = (q, v) => {
  const u = [q[1], q[2], q[3]];
  const c = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const t = c(u, v).map((x) => 2 * x), w = c(u, t);
  return [0, 1, 2].map((i) => v[i] + q[0] * t[i] + w[i]);
};
{
  const { page, trajectory, svgText } = await openRun(["kinematics", join(fixtures, "slider-crank.json")], "slider-crank-run");
  const figures = await page.$$eval("figure.plot svg", (s) => s.length);
  expect(figures >= 3, `slider-crank run: ${figures} plots`);
  expect((svgText.match(/<svg /g) || []).length === figures + 1, "slider-crank run: --plot holds the page's plots");
  const crankAt = async () => page.evaluate(() => {
    const V = window.tenonView, k = V.data.parts.findIndex((p) => p.id === "crank");
    const line = document.querySelector(`g.part[data-part='${k}'] polyline`).getAttribute("points").trim().split(" ");
    return { k, frame: V.frame, drawn: line[line.length - 1].split(",").map(Number), local: V.data.parts[k].pts.at(-1) };
  });
  const first = await crankAt();
  await page.click("#play");
  await page.waitForFunction(() => window.tenonView.frame >= 20, null, { timeout: 15000 });
  await page.click("#play");
  await page.waitForTimeout(100);
  const later = await crankAt();
  expect(later.frame > first.frame, "slider-crank run: playing did not advance the frames");
  const f = trajectory.frames[later.frame], pose = f.parts.crank;
  const world = rotate(pose.quaternion, later.local).map((x, i) => x + pose.position[i]);
  const want = await page.evaluate((w) => window.tenonView.project(w), world);
  const off = Math.hypot(want[0] - later.drawn[0], want[1] - later.drawn[1]);
  expect(off < 0.2, `slider-crank run: the crank is drawn ${off.toFixed(2)} px from where frame ${later.frame} puts it`);
  expect(Math.hypot(first.drawn[0] - later.drawn[0], first.drawn[1] - later.drawn[1]) > 5, "slider-crank run: the crank did not move");
  await page.screenshot({ path: join(out, "slider-crank-run.png") });
  await page.close();
}
{
  const { page } = await openRun(["simulate", join(fixtures, "dynamics", "pendulum-swing.json"), "--end", "0.5"], "pendulum-swing-run");
  const titles = await page.$$eval("figure.plot svg text", (t) => t.map((x) => x.textContent.trim()));
  for (const want of ["energy", "largest residual", "joint reaction forces (magnitude)"]) {
    expect(titles.includes(want), `pendulum-swing run: no plot '${want}'`);
  }
  await page.close();
}

await browser.close();
console.log(`browser: ${pages} pages opened in Chromium, ${glyphs} joint glyphs and ${marks} free-motion marks matched their reports, ${hovers} conflict sets lit on hover; screenshots in ${out}`);
if (failures.length) {
  console.error(`${failures.length} failure(s)`);
  process.exit(1);
}
