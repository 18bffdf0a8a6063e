//! What a CAD host does between solves: move a part by hand, suppress or bring back a
//! joint, add and remove parts, markers and joints. A structural change rebuilds the
//! equations from the assembly at its current placements, so the next solve starts
//! where the parts are now; a change the model refuses, or that cannot be built,
//! leaves the mechanism as it was.

use tenon_model::{Assembly, Joint, JointKey, ModelError, Part, PartKey, Placement, Pose};

use crate::mechanism::{Built, Mechanism};
use crate::Error;

impl Mechanism {
    /// Applies `change` to the assembly at its current placements and rebuilds; on any
    /// error nothing changes.
    fn rebuild<T>(
        &mut self,
        change: impl FnOnce(&mut Assembly) -> Result<T, ModelError>,
    ) -> Result<T, Error> {
        let mut next = self.assembly();
        let out = change(&mut next)?;
        let built = Built::new(&next, self.options, &mut |_| {})?;
        self.assembly = next;
        self.built = built;
        self.last = None;
        Ok(out)
    }

    /// Places a part by hand (a free part: the next solve starts from there; a
    /// grounded part: it is held there from now on).
    pub fn set_placement(&mut self, part: &str, pose: &Pose) -> Result<(), Error> {
        let key = self
            .assembly
            .part_by_id(part)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        let placement = Placement::from_numbers(pose.position, pose.quaternion);
        let system = &self.built.system;
        let free = system
            .free_index_of(key)
            .and_then(|k| system.free_parts().get(k))
            .copied();
        match free {
            Some(fp) => {
                // Any non-zero finite quaternion, made unit (scaled first: no overflow).
                let q = tenon_model::unit(pose.quaternion)
                    .filter(|_| pose.position.iter().all(|x| x.is_finite()))
                    .ok_or_else(|| Error::NotFinite {
                        what: format!("placement of part '{part}'"),
                        value: pose.quaternion.iter().map(|c| c * c).sum::<f64>().sqrt(),
                    })?;
                let values = [
                    pose.position[0],
                    pose.position[1],
                    pose.position[2],
                    q[0],
                    q[1],
                    q[2],
                    q[3],
                ];
                for (var, v) in fp.vars.iter().zip(values) {
                    self.built.state[var.index()] = v;
                }
                Ok(())
            }
            None => self.rebuild(|a| a.set_part_placement(key, placement)),
        }
    }

    /// Suppresses a joint (kept in the file, left out of the solve) or brings it back.
    pub fn set_suppressed(&mut self, joint: &str, suppressed: bool) -> Result<(), Error> {
        let key = self.joint_key_or_err(joint)?;
        self.rebuild(|a| a.set_joint_suppressed(key, suppressed))
    }

    /// Adds a part (checked as in a file).
    pub fn add_part(&mut self, part: Part) -> Result<PartKey, Error> {
        self.rebuild(|a| a.add_part(part))
    }

    /// Adds a marker to a part.
    pub fn add_marker(
        &mut self,
        part: &str,
        name: &str,
        placement: Placement,
    ) -> Result<(), Error> {
        let key = self
            .assembly
            .part_by_id(part)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        self.rebuild(|a| a.add_marker(key, name, placement))
    }

    /// Adds a joint (checked as in a file: fields, profiles, limits).
    pub fn add_joint(&mut self, joint: Joint) -> Result<JointKey, Error> {
        self.rebuild(|a| a.add_joint(joint))
    }

    /// Removes a joint and the motions that drive it.
    pub fn remove_joint(&mut self, joint: &str) -> Result<Joint, Error> {
        let key = self.joint_key_or_err(joint)?;
        self.rebuild(|a| a.remove_joint(key))
    }

    /// Removes a part with its joints (their ids are returned), springs and loads.
    pub fn remove_part(&mut self, part: &str) -> Result<Vec<String>, Error> {
        let key = self
            .assembly
            .part_by_id(part)
            .ok_or_else(|| Error::UnknownPart(part.to_string()))?;
        self.rebuild(|a| a.remove_part(key).map(|(_, joints)| joints))
    }

    fn joint_key_or_err(&self, joint: &str) -> Result<JointKey, Error> {
        self.assembly
            .joint_by_id(joint)
            .ok_or_else(|| Error::UnknownJoint(joint.to_string()))
    }
}
