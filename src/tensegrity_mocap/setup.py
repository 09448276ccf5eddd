"""ament_python / pip package of the motion-capture bridge."""
from setuptools import find_packages, setup

PACKAGE = "tensegrity_mocap"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.24", "scipy>=1.10", "matplotlib>=3.6", "pyyaml>=6", "tensegrity_engine", "tensegrity_ros_common"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Motion-capture bridge (NatNet, Motive CSV), node tracking, models from captures, sim-vs-real comparison",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},      # colcon test finds pytest here (tests_require is gone in setuptools 72+)
    entry_points={
        "console_scripts": [
            "mocap_bridge_node = tensegrity_mocap.bridge.node:main",
            "tensegrity-compare = tensegrity_mocap.cli.compare:main",
            "tensegrity-mocap = tensegrity_mocap.cli.mocap:main",
        ],
        # the engine's dynamic identification reads these captures through this group (it imports no mocap code)
        "tensegrity_engine.capture_readers": [
            "csv = tensegrity_mocap.compare.readers:read_csv",
            "mcap = tensegrity_mocap.compare.readers:read_mcap",
        ],
    },
)
