"""ament_python / pip package of the controller nodes (rolling locomotion, plate pose)."""
from setuptools import find_packages, setup

PACKAGE = "tensegrity_control"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.24", "tensegrity_engine", "tensegrity_ros_common"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Controller nodes: rolling locomotion from cmd_vel or a goal, plate pose from goals and paths",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},      # colcon test finds pytest here (tests_require is gone in setuptools 72+)
    entry_points={"console_scripts": ["locomotion_controller = tensegrity_control.locomotion_node:main",
                                      "pose_controller = tensegrity_control.pose_node:main",
                                      "policy_controller = tensegrity_control.policy_node:main"]},
)
