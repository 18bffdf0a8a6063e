//! The page's data and its self-containment (the browser tests in `tests/browser`
//! open it in Chromium).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn fixture(name: &str) -> String {
    format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn checked(name: &str) -> (Assembly, Report, Diagnosis) {
    let assembly = tenon::load(fixture(name)).unwrap();
    let mut mechanism = tenon::Mechanism::new(assembly).unwrap();
    let diagnosis = mechanism.diagnose().unwrap();
    let report = mechanism.report().cloned().unwrap();
    (mechanism.assembly(), report, diagnosis)
}

/// The data block of a page, parsed back.
fn data_of(page: &str) -> Value {
    let start = page.find("id=\"tenon-data\">").unwrap() + "id=\"tenon-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn a_four_bar_page_carries_every_joint_with_its_status() {
    let (assembly, report, diagnosis) = checked("four-bar.json");
    let page = check_html(&assembly, &report, &diagnosis, "four-bar.json");
    let data = data_of(&page);
    let joints = data["joints"].as_array().unwrap();
    assert_eq!(joints.len(), 4);
    let status: Vec<(&str, &str)> = joints
        .iter()
        .map(|j| (j["id"].as_str().unwrap(), j["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [
            ("crank-pivot", "ok"),
            ("crank-coupler", "ok"),
            ("coupler-rocker", "ok"),
            ("rocker-pivot", "redundant")
        ]
    );
    assert_eq!(data["motions"].as_array().unwrap().len(), 3);
    assert_eq!(data["dof"], 1);
    assert_eq!(data["simplified"], false);
    // The crank's marker b sits 40 mm along its x axis, in part coordinates.
    let crank = &data["parts"][1];
    assert_eq!(crank["id"], "crank");
    assert_eq!(crank["pts"][1], json!([40.0, 0.0, 0.0]));
}

#[test]
fn a_conflict_names_its_whole_set_and_its_size() {
    let (assembly, report, diagnosis) = checked("conflicting/bent-four-bar.json");
    let data = data_of(&check_html(&assembly, &report, &diagnosis, "bent"));
    assert_eq!(data["status"], "failed");
    let conflicts = data["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0]["conflict"], true);
    let members = conflicts[0]["joints"].as_array().unwrap();
    assert!(members.len() >= 2);
    for m in members {
        let j = &data["joints"][m.as_u64().unwrap() as usize];
        assert_eq!(j["status"], "conflicting");
        assert_eq!(j["sets"], json!([0]));
    }
    assert!(conflicts[0]["violation"].as_f64().unwrap() > 0.1);
}

#[test]
fn the_page_is_self_contained_and_its_data_cannot_end_the_script() {
    let (mut assembly, report, diagnosis) = checked("four-bar.json");
    assembly.set_name("</script><img src=x>");
    let page = check_html(&assembly, &report, &diagnosis, "a <b> & 'c'");
    assert!(page.contains("<title>a &lt;b&gt; &amp; &#39;c&#39; - Tenon</title>"));
    assert!(!page.contains("</script><img"));
    assert_eq!(data_of(&page)["name"], "</script><img src=x>");
    // Nothing is fetched: no address, and the policy forbids any load.
    assert_eq!(page.matches("http://").count(), 1);
    assert!(page.contains("http://www.w3.org/2000/svg"));
    assert!(!page.contains("https://"));
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn numbers_keep_seven_digits() {
    assert_eq!(short(1.0 / 3.0), 0.3333333);
    assert_eq!(short(123456789.0), 123456800.0);
    assert_eq!(short(-0.0), 0.0);
    assert_eq!(short(f64::NAN), 0.0);
}

#[test]
fn a_run_page_carries_every_frame_and_its_plots() {
    let assembly = tenon::load(fixture("slider-crank.json")).unwrap();
    let mut mechanism = tenon::Mechanism::new(assembly).unwrap();
    let settings =
        tenon::RunSettings::for_assembly(mechanism.model(), Some(0.5), Some(0.01)).unwrap();
    let trajectory = mechanism.kinematics(settings).unwrap();
    let view = crate::kinematics_view(&mechanism, &trajectory);
    assert_eq!(view.times.len(), 51);
    assert_eq!(view.parts.len(), 3);
    let titles: Vec<&str> = view.plots.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "joint angles",
            "joint angle rates",
            "joint distances",
            "joint distance rates",
            "largest residual"
        ]
    );
    // The crank turns at the drive's rate: 360 degrees per second.
    let rates = &view.plots[1].series[0];
    assert_eq!(rates.name, "main-bearing.angle_rate");
    assert_eq!(rates.values.len(), 51);
    assert!(rates.values.iter().all(|r| (r - 360.0).abs() < 1e-6));
    assert_eq!(view.plots[1].unit, "deg/s");

    let page = run_html(&mechanism.assembly(), &view, "51 frames", "run").unwrap();
    let data = data_of(&page);
    let run = &data["run"];
    assert_eq!(run["kind"], "kinematics");
    assert_eq!(run["times"].as_array().unwrap().len(), 51);
    let poses = run["poses"].as_array().unwrap();
    assert_eq!(poses.len(), 51);
    assert_eq!(poses[50].as_array().unwrap().len(), 3 * 7);
    assert_eq!(run["plots"].as_array().unwrap().len(), 5);
    assert!(run["plots"][0]["svg"]
        .as_str()
        .unwrap()
        .contains("joint angles"));

    let svg = run_plots_svg(&view).unwrap();
    assert_eq!(svg.matches("<svg ").count(), 1 + 5);
    assert!(svg.contains("main-bearing.angle"));
}

#[test]
fn a_plot_of_constant_or_missing_values_still_has_axes() {
    let plot = crate::Plot {
        title: "flat".into(),
        unit: "mm".into(),
        time_unit: "s".into(),
        series: vec![
            crate::Series {
                name: "still".into(),
                values: vec![2.0; 3],
            },
            crate::Series {
                name: "gaps".into(),
                values: vec![f64::NAN, 1e-12, f64::INFINITY],
            },
        ],
    };
    let svg = crate::plot_svg(&[0.0, 0.5, 1.0], &plot, (400, 200)).unwrap();
    assert!(svg.contains("flat") && svg.contains("still") && svg.contains("t (s)"));
    let none = crate::plot_svg(&[], &plot, (400, 200)).unwrap();
    assert!(none.contains("flat"));
}
